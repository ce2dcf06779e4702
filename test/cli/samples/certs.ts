/** Contract samples of the `certs` commands (test/cli/result-samples.ts). */
import type CertsFingerprint from "../../../cli/commands/certs/fingerprint.js";
import type CertsInit from "../../../cli/commands/certs/init.js";
import type CertsIssue from "../../../cli/commands/certs/issue.js";
import type CertsIssueServer from "../../../cli/commands/certs/issue-server.js";
import { samplesOf, type ResultOf } from "../result-samples.js";

const ca: ResultOf<typeof CertsInit> = {
  subject: { CN: "qimctl CA", OU: null },
  issuerCN: "qimctl CA",
  role: null,
  notBefore: "2026-11-29T21:56:00.000Z",
  notAfter: "2036-11-27T21:56:00.000Z",
  fingerprint256: "1F:68:0A:0B",
  serialHex: "5A01",
  sans: [],
  certPath: "/home/alice/.qim/pki/ca.crt",
  keyPath: "/home/alice/.qim/pki/ca.key",
};

export const samples = {
  // a CA has no subjectAltName (sans is empty); the second sample shows what the shared type holds there
  "certs init": samplesOf<ResultOf<typeof CertsInit>>(ca, { ...ca, sans: ["qim-ca.internal"] }),
  "certs issue-server": samplesOf<ResultOf<typeof CertsIssueServer>>({
    ...ca,
    subject: { CN: "localhost", OU: null },
    sans: ["localhost", "127.0.0.1"],
    certPath: "/home/alice/.qim/pki/server.crt",
    keyPath: "/home/alice/.qim/pki/server.key",
  }),
  "certs issue": samplesOf<ResultOf<typeof CertsIssue>>(
    {
      ...ca,
      subject: { CN: "alice", OU: "operator" },
      role: "operator",
      certPath: "/home/alice/.qim/pki/alice.crt",
      keyPath: "/home/alice/.qim/pki/alice.key",
      caPath: "/home/alice/.qim/pki/ca.crt",
      contextPath: null,
      contextName: null,
    },
    {
      ...ca,
      subject: { CN: "alice", OU: "operator" },
      role: "operator",
      certPath: "/home/alice/.qim/pki/alice.crt",
      keyPath: "/home/alice/.qim/pki/alice.key",
      caPath: "/home/alice/.qim/pki/ca.crt",
      contextPath: "/home/alice/.config/qimctl/config.json",
      contextName: "alice",
      // as for certs init: a client certificate has no subjectAltName; this shows what the field holds
      sans: ["alice.internal"],
    },
  ),
  "certs fingerprint": samplesOf<ResultOf<typeof CertsFingerprint>>({
    certificates: [
      {
        certPath: "/home/alice/.qim/pki/alice.crt",
        fingerprint256: "1F:68:0A:0B",
        subject: { CN: "alice", OU: "operator" },
        notAfter: "2027-11-29T21:56:00.000Z",
        serialHex: "5A02",
        denyListLine: "1F:68:0A:0B  # CN=alice, OU=operator, expires 2027-11-29T21:56:00.000Z",
      },
      {
        certPath: "/home/alice/other.crt",
        fingerprint256: "2A:79:1B:1C",
        subject: { CN: null, OU: null },
        notAfter: "2027-11-29T21:56:00.000Z",
        serialHex: "5A03",
        denyListLine: "2A:79:1B:1C  # no CN/OU, expires 2027-11-29T21:56:00.000Z",
      },
    ],
  }),
};
