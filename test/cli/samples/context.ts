/** Contract samples of the `context` commands (test/cli/result-samples.ts). */
import type ContextCurrent from "../../../cli/commands/context/current.js";
import type ContextDelete from "../../../cli/commands/context/delete.js";
import type ContextList from "../../../cli/commands/context/list.js";
import type ContextSet from "../../../cli/commands/context/set.js";
import type ContextShow from "../../../cli/commands/context/show.js";
import type ContextUse from "../../../cli/commands/context/use.js";
import { samplesOf, type ResultOf } from "../result-samples.js";
import type { ContextEntry } from "../../../cli/context/results.js";

const CONFIG = "/home/alice/.config/qimctl/config.json";

const prod: ContextEntry = {
  name: "prod",
  current: true,
  endpoint: "qim-admin.internal:7443",
  tenant: "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c",
  gateway: null,
  insecure: false,
  ca: "/etc/qim/ca.crt",
  cert: "/home/alice/.qim/alice.crt",
  key: "/home/alice/.qim/alice.key",
  devDataDir: null,
};

const dev: ContextEntry = {
  name: "dev",
  current: false,
  endpoint: "localhost:45307",
  tenant: null,
  gateway: "wss://localhost:45311/",
  insecure: true,
  ca: null,
  cert: null,
  key: null,
  devDataDir: "/home/alice/qim/.qim/dev",
};

const certificate = {
  subject: { CN: "alice", OU: "operator" },
  issuerCN: "qimctl CA",
  role: "operator",
  notBefore: "2026-11-29T21:56:00.000Z",
  notAfter: "2027-11-29T21:56:00.000Z",
  validNow: true,
  fingerprint256: "1F:68:0A:0B",
  serialHex: "5A02",
};

export const samples = {
  "context current": samplesOf<ResultOf<typeof ContextCurrent>>(
    { name: "prod", file: CONFIG, selectedBy: "the current context", endpoint: prod.endpoint, tenant: prod.tenant, insecure: false, ca: prod.ca, cert: prod.cert, key: prod.key },
    { name: null, file: "/home/alice/qim/.qim/dev/context.json", selectedBy: "QIMCTL_CONTEXT", endpoint: null, tenant: null, insecure: true, ca: null, cert: null, key: null },
  ),
  "context list": samplesOf<ResultOf<typeof ContextList>>(
    { config: CONFIG, configExists: true, current: "prod", contexts: [dev, prod], legacyFile: null, envOverride: null },
    { config: CONFIG, configExists: false, current: null, contexts: [], legacyFile: "/home/alice/.config/qimctl/context.json", envOverride: "staging" },
  ),
  "context show": samplesOf<ResultOf<typeof ContextShow>>(
    {
      name: "prod",
      file: CONFIG,
      selectedBy: "the current context",
      current: true,
      gateway: "wss://qim-gw.internal/",
      endpoint: "qim-admin.internal:7443",
      tenant: "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c",
      insecure: false,
      ca: { path: "/etc/qim/ca.crt", exists: true, certificate: { ...certificate, subject: { CN: "qimctl CA", OU: null }, role: null }, problem: null },
      cert: { path: "/home/alice/.qim/alice.crt", exists: true, certificate, problem: null },
      key: { path: "/home/alice/.qim/alice.key", exists: true, mode: "0600", problem: null },
      devDataDir: null,
    },
    {
      name: "dev",
      file: CONFIG,
      selectedBy: "--context",
      current: false,
      endpoint: "localhost:45307",
      tenant: null,
      gateway: "wss://localhost:45311/",
      insecure: false,
      ca: null,
      cert: { path: "/home/alice/qim/.qim/dev/pki/admin.crt", exists: false, certificate: null, problem: "missing" },
      key: { path: "/home/alice/qim/.qim/dev/pki/admin.key", exists: false, mode: null, problem: "missing" },
      devDataDir: "/home/alice/qim/.qim/dev",
    },
    {
      name: null,
      file: "/home/alice/qim/.qim/dev/context.json",
      selectedBy: "argument",
      current: false,
      endpoint: "localhost:45307",
      tenant: "1d63fa11-ec98-45d9-8df7-44f9956204a9",
      gateway: null,
      insecure: false,
      ca: null,
      cert: null,
      key: null,
      devDataDir: null,
    },
  ),
  "context use": samplesOf<ResultOf<typeof ContextUse>>(
    { config: CONFIG, current: "prod", previous: "dev", changed: true, envOverride: null, imported: null },
    { config: CONFIG, current: "default", previous: null, changed: false, envOverride: "staging", imported: { name: "default", from: "/home/alice/.config/qimctl/context.json" } },
  ),
  "context set": samplesOf<ResultOf<typeof ContextSet>>(
    { config: CONFIG, name: "prod", created: true, changed: true, context: prod, imported: null },
    { config: CONFIG, name: "dev", created: false, changed: false, context: dev, imported: { name: "default", from: "/home/alice/.config/qimctl/context.json" } },
  ),
  "context delete": samplesOf<ResultOf<typeof ContextDelete>>(
    { config: CONFIG, name: "prod", deleted: true, wasCurrent: true, current: null, remaining: ["dev"] },
    { config: CONFIG, name: "staging", deleted: false, wasCurrent: false, current: "prod", remaining: [] },
  ),
};
