import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import tls from "node:tls";
import * as grpc from "@grpc/grpc-js";
import forge from "node-forge";
import {
  certificateInfo,
  createCa,
  generateKeyPair,
  issueClientCert,
  issueNodeCert,
  issueServerCert,
  PkiFileExistsError,
  writePkiFile,
  type ClientCertOptions,
  type PemPair,
} from "../../certs/pki.js";
import { OPERATOR_ROLES as ROLES } from "../../server/pipeline/auth.js";
import { CLIENT_NAMES, TEST_PKI_NAMES, testPki, writeTestPki, type TestPki } from "./fixture.js";

const DAY_MS = 24 * 60 * 60 * 1000;
const SERVER_AUTH = "1.3.6.1.5.5.7.3.1";
const CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";

let pki: TestPki;
before(async () => {
  const started = performance.now();
  pki = await testPki();
  console.log(`# testPki() built in ${Math.round(performance.now() - started)} ms`);
});

function x509(pair: PemPair): X509Certificate {
  return new X509Certificate(pair.certPem);
}

/** The extensions forge reads back, by name. */
function extension(pair: PemPair, name: string): Record<string, unknown> | undefined {
  return forge.pki.certificateFromPem(pair.certPem).getExtension(name) as Record<string, unknown> | undefined;
}

/** "IP Address:0:0:0:0:0:0:0:1" (OpenSSL's spelling) → "::1", so both sides compare as addresses. */
function nodeSans(cert: X509Certificate): string[] {
  if (!cert.subjectAltName) return [];
  return cert.subjectAltName.split(", ").map((entry) => {
    const [kind, value] = [entry.slice(0, entry.indexOf(":")), entry.slice(entry.indexOf(":") + 1)];
    if (kind !== "IP Address" || !value.includes(":")) return value;
    return new URL(`http://[${value}]/`).hostname.slice(1, -1);
  });
}

describe("issued certificates", () => {
  it("the CA is a self-signed CA certificate for signing certificates and CRLs only", () => {
    const ca = x509(pki.ca);
    assert.equal(ca.ca, true);
    assert.equal(ca.subject, "CN=qimctl test CA");
    assert.equal(ca.issuer, ca.subject);
    assert.ok(ca.verify(ca.publicKey), "self-signed");
    const basicConstraints = extension(pki.ca, "basicConstraints")!;
    assert.equal(basicConstraints.cA, true);
    assert.equal(basicConstraints.critical, true);
    const keyUsage = extension(pki.ca, "keyUsage")!;
    assert.equal(keyUsage.keyCertSign, true);
    assert.equal(keyUsage.cRLSign, true);
    assert.equal(keyUsage.digitalSignature, false);
    assert.match(String(extension(pki.ca, "subjectKeyIdentifier")?.subjectKeyIdentifier), /^[0-9a-f]{40}$/);
    assert.equal(ca.keyUsage, undefined, "no extendedKeyUsage on the CA");
    assert.equal(ca.publicKey.asymmetricKeyDetails?.modulusLength, 2048);
    assert.equal(forge.pki.certificateFromPem(pki.ca.certPem).siginfo.algorithmOid, forge.pki.oids.sha256WithRSAEncryption);
  });

  it("the server certificate: serverAuth, CN = first host, DNS and IP (v4, v6) SANs", () => {
    const server = x509(pki.server);
    assert.equal(server.ca, false);
    assert.equal(server.subject, "CN=localhost");
    assert.deepEqual(server.keyUsage, [SERVER_AUTH]);
    assert.equal(server.subjectAltName, "DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1");
    assert.equal(server.checkHost("localhost"), "localhost");
    assert.equal(server.checkIP("127.0.0.1"), "127.0.0.1");
    assert.equal(server.checkIP("::1"), "::1");
    assert.ok(server.checkIssued(x509(pki.ca)));
    assert.ok(server.verify(x509(pki.ca).publicKey));
    assert.deepEqual(certificateInfo(pki.server.certPem).sans, ["localhost", "127.0.0.1", "::1"]);
  });

  it("client certificates: clientAuth, CN = name, OU = role, one year from (now − 5 min)", () => {
    for (const role of ROLES) {
      const info = certificateInfo(pki[role].certPem);
      const cert = x509(pki[role]);
      assert.deepEqual(info.subject, { CN: CLIENT_NAMES[role], OU: role });
      assert.equal(cert.subject, `CN=${CLIENT_NAMES[role]}\nOU=${role}`);
      assert.deepEqual(cert.keyUsage, [CLIENT_AUTH]);
      assert.equal(info.isCa, false);
      assert.deepEqual(info.sans, []);
      assert.ok(cert.verify(x509(pki.ca).publicKey), `${role} is signed by the CA`);
      const now = Date.now();
      assert.ok(info.notBefore.getTime() <= now - 4 * 60 * 1000 && info.notBefore.getTime() > now - 60 * 60 * 1000);
      assert.equal(info.notAfter.getTime() - info.notBefore.getTime(), 365 * DAY_MS);
    }
  });

  it("node certificates: serverAuth + clientAuth, CN = node id, OU = node, the node's hosts as SANs", () => {
    for (const [which, nodeId] of [["nodeA", CLIENT_NAMES.nodeA], ["nodeB", CLIENT_NAMES.nodeB]] as const) {
      const info = certificateInfo(pki[which].certPem);
      const cert = x509(pki[which]);
      assert.deepEqual(info.subject, { CN: nodeId, OU: "node" });
      assert.deepEqual([...(cert.keyUsage ?? [])].sort(), [SERVER_AUTH, CLIENT_AUTH].sort());
      assert.equal(cert.subjectAltName, "DNS:localhost, IP Address:127.0.0.1");
      assert.equal(cert.checkHost("localhost"), "localhost");
      assert.equal(info.isCa, false);
      assert.ok(cert.verify(x509(pki.ca).publicKey));
    }
    const other = issueNodeCert(pki.ca, { nodeId: "node-9", hosts: ["qim-9.internal", "10.0.4.19", "::1"], days: 30, keyPair: generateKeyPair() });
    const info = certificateInfo(other.certPem);
    assert.deepEqual(info.sans, ["qim-9.internal", "10.0.4.19", "::1"]);
    assert.equal(info.notAfter.getTime() - info.notBefore.getTime(), 30 * DAY_MS);
    assert.throws(() => issueNodeCert(pki.ca, { nodeId: "node-9", hosts: [] }), /^Error: hosts:/);
    assert.throws(() => issueNodeCert(pki.ca, { nodeId: "", hosts: ["localhost"] }), /^Error: nodeId:/);
    assert.throws(() => issueNodeCert(pki.ca, { nodeId: "n", hosts: ["not a host"] }), /^Error: hosts:/);
  });

  it("a node certificate works as the server and as the client of one mTLS connection (node to node)", async () => {
    const h = await handshake(pki.nodeB, true, pki.nodeA);
    assert.equal(h.authorized, true);
    assert.equal(h.received, "hello");
    assert.equal(h.peer?.subject.CN, CLIENT_NAMES.nodeB);
    assert.equal(h.peer?.subject.OU, "node");
    assert.equal(h.serverCert?.subject.CN, CLIENT_NAMES.nodeA);
  });

  it("the negative fixtures are what their names say", () => {
    const now = Date.now();
    const expired = certificateInfo(pki.expired.certPem);
    assert.deepEqual(expired.subject, { CN: CLIENT_NAMES.expired, OU: "admin" });
    assert.ok(expired.notAfter.getTime() < now && expired.notAfter.getTime() > now - 2 * DAY_MS);

    const notYetValid = certificateInfo(pki.notYetValid.certPem);
    assert.deepEqual(notYetValid.subject, { CN: CLIENT_NAMES.notYetValid, OU: "admin" });
    assert.ok(notYetValid.notBefore.getTime() > now && notYetValid.notBefore.getTime() < now + 2 * DAY_MS);

    const other = x509(pki.otherCaAdmin);
    assert.equal(other.issuer, x509(pki.ca).subject, "same issuer name as the real CA: only the signature differs");
    assert.ok(!other.verify(x509(pki.ca).publicKey));
    assert.ok(other.verify(x509(pki.otherCa).publicKey));

    assert.deepEqual(certificateInfo(pki.unknownRole.certPem).subject, { CN: CLIENT_NAMES.unknownRole, OU: "root" });
    assert.deepEqual(certificateInfo(pki.noRole.certPem).subject, { CN: CLIENT_NAMES.noRole, OU: null });
    assert.equal(x509(pki.noRole).subject, `CN=${CLIENT_NAMES.noRole}`);
    assert.deepEqual(pki.caAsClient, pki.ca);
  });

  it("serials are 16 random bytes, positive and minimally encoded", () => {
    const serials = new Set<string>();
    for (const name of TEST_PKI_NAMES) {
      if (name === "caAsClient") continue;
      const { serialHex } = certificateInfo(pki[name].certPem);
      assert.match(serialHex, /^[0-7][0-9A-F]{31}$/);
      assert.notEqual(serialHex.slice(0, 2), "00");
      serials.add(serialHex);
    }
    assert.equal(serials.size, TEST_PKI_NAMES.length - 1);
  });

  it("the fixture reuses four keys", () => {
    const keys = new Set(TEST_PKI_NAMES.map((name) => pki[name].keyPem));
    assert.equal(keys.size, 4);
    assert.equal(pki.admin.keyPem, pki.otherCaAdmin.keyPem);
    assert.equal(x509(pki.admin).publicKey.export({ type: "spki", format: "pem" }), x509(pki.viewer).publicKey.export({ type: "spki", format: "pem" }));
  });
});

describe("certificateInfo agrees with crypto.X509Certificate", () => {
  it("on every fixture certificate", () => {
    for (const name of TEST_PKI_NAMES) {
      const info = certificateInfo(pki[name].certPem);
      const cert = x509(pki[name]);
      assert.equal(info.fingerprint256, cert.fingerprint256, name);
      assert.match(info.fingerprint256, /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
      assert.equal(info.serialHex, cert.serialNumber, name);
      assert.equal(info.notBefore.getTime(), new Date(cert.validFrom).getTime(), name);
      assert.equal(info.notAfter.getTime(), new Date(cert.validTo).getTime(), name);
      assert.equal(info.isCa, cert.ca, name);
      const subject = [`CN=${info.subject.CN}`, ...(info.subject.OU === null ? [] : [`OU=${info.subject.OU}`])].join("\n");
      assert.equal(subject, cert.subject, name);
      assert.equal(`CN=${info.issuerCN}`, cert.issuer, name);
      assert.deepEqual(info.sans, nodeSans(cert), name);
    }
  });

  it("on non-ASCII names and IPv6 SANs", () => {
    const key = generateKeyPair();
    const client = issueClientCert(pki.ca, { name: "zoë_ops@example.com", role: "viewer", keyPair: key });
    assert.equal(x509(client).subject, "CN=zoë_ops@example.com\nOU=viewer");
    assert.deepEqual(certificateInfo(client.certPem).subject, { CN: "zoë_ops@example.com", OU: "viewer" });

    const hosts = ["qim.example.com", "10.1.2.3", "2001:db8::1:0:0:1", "::ffff:192.0.2.1", "fe80::1"];
    const server = issueServerCert(pki.ca, { hosts, keyPair: key });
    const cert = x509(server);
    assert.deepEqual(certificateInfo(server.certPem).sans, nodeSans(cert));
    assert.deepEqual(certificateInfo(server.certPem).sans, ["qim.example.com", "10.1.2.3", "2001:db8::1:0:0:1", "::ffff:c000:201", "fe80::1"]);
    for (const ip of hosts.slice(1)) assert.equal(cert.checkIP(ip), ip);
    assert.equal(certificateInfo(server.certPem).subject.CN, "qim.example.com");
  });
});

describe("issuing refuses bad input", () => {
  it("a role outside ROLES, or none, unless allowAnyRole", () => {
    assert.throws(
      () => issueClientCert(pki.ca, { name: "x", role: "root" } as unknown as ClientCertOptions),
      /role: must be one of admin, operator, viewer, drill/,
    );
    assert.throws(() => issueClientCert(pki.ca, { name: "x", role: null } as unknown as ClientCertOptions), /role: must be one of/);
  });

  it("empty names, hosts, days and validity windows", () => {
    const key = generateKeyPair();
    assert.throws(() => issueClientCert(pki.ca, { name: "", role: "admin", keyPair: key }), /name: must be a non-empty string/);
    assert.throws(() => issueClientCert(pki.ca, { name: "a".repeat(65), role: "admin", keyPair: key }), /name: at most 64/);
    assert.throws(() => issueClientCert(pki.ca, { name: "a\nb", role: "admin", keyPair: key }), /control characters/);
    assert.throws(() => issueClientCert(pki.ca, { name: "a", role: "admin", days: 0, keyPair: key }), /days: must be a positive integer/);
    const now = new Date();
    assert.throws(
      () => issueClientCert(pki.ca, { name: "a", role: "admin", notBefore: now, notAfter: now, keyPair: key }),
      /notAfter: must be later than notBefore/,
    );
    assert.throws(() => issueServerCert(pki.ca, { hosts: [], keyPair: key }), /hosts: at least one/);
    assert.throws(() => issueServerCert(pki.ca, { hosts: ["bad host"], keyPair: key }), /neither a DNS name nor an IP address/);
    assert.throws(() => createCa({ days: 1.5, keyPair: key }), /days: must be a positive integer/);
  });

  it("a CA that is not a CA, or whose key is not its own", () => {
    const key = generateKeyPair();
    assert.throws(() => issueClientCert(pki.admin, { name: "a", role: "admin", keyPair: key }), /not a CA certificate/);
    const mixed = { certPem: pki.ca.certPem, keyPem: pki.otherCa.keyPem };
    assert.throws(() => issueClientCert(mixed, { name: "a", role: "admin", keyPair: key }), /private key does not belong/);
  });
});

describe("createCa defaults", () => {
  it("ten years, CN 'qimctl CA', a fresh key when none is given", () => {
    const ca = createCa();
    const info = certificateInfo(ca.certPem);
    assert.deepEqual(info.subject, { CN: "qimctl CA", OU: null });
    assert.equal(info.issuerCN, "qimctl CA");
    assert.equal(info.isCa, true);
    assert.equal(info.notAfter.getTime() - info.notBefore.getTime(), 3650 * DAY_MS);
    assert.ok(!Object.values(pki).some((p) => p.keyPem === ca.keyPem));
  });
});

// ---------------------------------------------------------------------------------------------

interface Handshake {
  /** The server's connection listener ran (the client certificate was accepted or not checked). */
  accepted: boolean;
  authorized?: boolean;
  authorizationError?: string | null;
  peer?: tls.PeerCertificate;
  /** The server's tlsClientError, when the handshake or verification failed there. */
  serverError?: string;
  /** What the client read before the connection closed. */
  received: string;
  /** The server certificate as the client saw it. */
  serverCert?: tls.PeerCertificate;
}

/**
 * One client connection to a fresh node:tls server on 127.0.0.1:0 that requires a client
 * certificate and trusts only `pki.ca`. The client also trusts only `pki.ca` and checks the server
 * certificate against the name "localhost".
 */
async function handshake(client: Partial<PemPair>, rejectUnauthorized = true, serverPair: PemPair = pki.server): Promise<Handshake> {
  const result: Handshake = { accepted: false, received: "" };
  let serverDone!: () => void;
  const serverOutcome = new Promise<void>((resolve) => (serverDone = resolve));
  const server = tls.createServer(
    {
      cert: serverPair.certPem,
      key: serverPair.keyPem,
      ca: [pki.ca.certPem],
      requestCert: true,
      rejectUnauthorized,
      minVersion: "TLSv1.3",
    },
    (socket) => {
      Object.assign(result, {
        accepted: true,
        authorized: socket.authorized,
        authorizationError: socket.authorizationError ?? null,
        peer: socket.getPeerCertificate(),
      });
      socket.end("hello");
      serverDone();
    },
  );
  server.on("tlsClientError", (err: NodeJS.ErrnoException) => {
    result.serverError = `${err.code ?? ""} ${err.message}`.trim();
    serverDone();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const clientClosed = new Promise<void>((resolve, reject) => {
      const socket = tls.connect({
        host: "127.0.0.1",
        port,
        servername: "localhost",
        ca: [pki.ca.certPem],
        ...(client.certPem === undefined ? {} : { cert: client.certPem, key: client.keyPem }),
      });
      socket.on("secureConnect", () => {
        // The client verified the server certificate; anything else would have been an error.
        if (!socket.authorized) reject(new Error(`client did not authorize the server: ${socket.authorizationError}`));
        result.serverCert = socket.getPeerCertificate();
      });
      socket.on("data", (chunk: Buffer) => (result.received += chunk.toString()));
      socket.on("error", () => {});
      socket.on("close", () => resolve());
    });
    await Promise.all([serverOutcome, clientClosed]);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
  return result;
}

describe("a real TLS 1.3 handshake with the CA as the only trust root", { timeout: 30_000 }, () => {
  it("accepts the admin client and the server sees its CN, OU and fingerprint", async () => {
    const h = await handshake(pki.admin);
    assert.equal(h.accepted, true);
    assert.equal(h.authorized, true);
    assert.equal(h.received, "hello");
    assert.equal(h.peer?.subject.CN, CLIENT_NAMES.admin);
    assert.equal(h.peer?.subject.OU, "admin");
    assert.equal(h.peer?.fingerprint256, certificateInfo(pki.admin.certPem).fingerprint256);
    assert.equal(h.peer?.serialNumber, certificateInfo(pki.admin.certPem).serialHex);
  });

  it("accepts every role", async () => {
    for (const role of ROLES) {
      const h = await handshake(pki[role]);
      assert.equal(h.authorized, true, role);
      assert.equal(h.peer?.subject.OU, role);
    }
  });

  it("the server certificate also carries 127.0.0.1 and ::1", async () => {
    const peer = (await handshake(pki.admin)).serverCert!;
    assert.equal(peer.fingerprint256, certificateInfo(pki.server.certPem).fingerprint256);
    assert.equal(tls.checkServerIdentity("localhost", peer), undefined);
    assert.equal(tls.checkServerIdentity("127.0.0.1", peer), undefined);
    assert.equal(tls.checkServerIdentity("::1", peer), undefined);
    assert.ok(tls.checkServerIdentity("example.com", peer) instanceof Error);
  });

  for (const name of ["otherCaAdmin", "expired", "notYetValid", "caAsClient"] as const) {
    it(`rejects ${name}: the server drops the connection before its handler runs`, async () => {
      const h = await handshake(pki[name]);
      assert.equal(h.accepted, false);
      assert.equal(h.received, "");
      assert.ok(h.serverError, "tlsClientError on the server");
    });
  }

  it("rejects a client without a certificate", async () => {
    const h = await handshake({});
    assert.equal(h.accepted, false);
    assert.match(h.serverError ?? "", /PEER_DID_NOT_RETURN_A_CERTIFICATE/);
  });

  // Node verifies after the handshake and, with rejectUnauthorized, only destroys the socket (the
  // server's tlsClientError says "socket hang up"). With rejectUnauthorized false the same check
  // tells why, which proves each negative fixture is refused for its own reason.
  const reasons = {
    otherCaAdmin: /^(UNABLE_TO_VERIFY_LEAF_SIGNATURE|CERT_SIGNATURE_FAILURE)$/,
    expired: /^CERT_HAS_EXPIRED$/,
    notYetValid: /^CERT_NOT_YET_VALID$/,
    caAsClient: /^INVALID_PURPOSE$/,
  } as const;
  for (const [name, reason] of Object.entries(reasons) as [keyof typeof reasons, RegExp][]) {
    it(`refuses ${name} for the right reason`, async () => {
      const h = await handshake(pki[name], false);
      assert.equal(h.authorized, false);
      assert.match(h.authorizationError ?? "", reason);
    });
  }

  it("lets unknownRole and noRole through TLS: the role check is the API's job", async () => {
    const unknown = await handshake(pki.unknownRole);
    assert.equal(unknown.authorized, true);
    assert.equal(unknown.peer?.subject.OU, "root");
    const none = await handshake(pki.noRole);
    assert.equal(none.authorized, true);
    assert.equal(none.peer?.subject.CN, CLIENT_NAMES.noRole);
    assert.equal(none.peer?.subject.OU, undefined);
  });
});

describe("grpc-js mTLS with these certificates", { timeout: 30_000 }, () => {
  const method = "/qim.test.Whoami/Whoami";
  const identity = (b: Buffer) => b;
  let server: grpc.Server;
  let port: number;

  before(async () => {
    server = new grpc.Server();
    const definition: grpc.ServiceDefinition = {
      Whoami: {
        path: method,
        requestStream: false,
        responseStream: false,
        requestSerialize: identity,
        requestDeserialize: identity,
        responseSerialize: identity,
        responseDeserialize: identity,
      },
    };
    server.addService(definition, {
      Whoami: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
        const peer = call.getAuthContext().sslPeerCertificate;
        callback(null, Buffer.from(JSON.stringify({ subject: peer?.subject, fingerprint256: peer?.fingerprint256 })));
      },
    });
    const credentials = grpc.ServerCredentials.createSsl(
      Buffer.from(pki.ca.certPem),
      [{ cert_chain: Buffer.from(pki.server.certPem), private_key: Buffer.from(pki.server.keyPem) }],
      true,
    );
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync("localhost:0", credentials, (err, p) => (err ? reject(err) : resolve(p))),
    );
  });

  after(() => server.forceShutdown());

  function whoami(client: PemPair): Promise<{ subject: Record<string, string>; fingerprint256: string }> {
    const channel = new grpc.Client(
      `localhost:${port}`,
      grpc.credentials.createSsl(Buffer.from(pki.ca.certPem), Buffer.from(client.keyPem), Buffer.from(client.certPem)),
    );
    return new Promise((resolve, reject) => {
      channel.makeUnaryRequest(method, identity, identity, Buffer.alloc(0), { deadline: Date.now() + 10_000 }, (err, value) => {
        channel.close();
        if (err) reject(err);
        else resolve(JSON.parse(value!.toString()));
      });
    });
  }

  it("the server reads CN, OU and fingerprint256 of the admin client", async () => {
    const peer = await whoami(pki.admin);
    assert.deepEqual(peer.subject, { CN: CLIENT_NAMES.admin, OU: "admin" });
    assert.equal(peer.fingerprint256, certificateInfo(pki.admin.certPem).fingerprint256);
  });

  it("a client of another CA gets UNAVAILABLE", async () => {
    await assert.rejects(whoami(pki.otherCaAdmin), (err: grpc.ServiceError) => {
      assert.equal(err.code, grpc.status.UNAVAILABLE);
      return true;
    });
  });
});

// ---------------------------------------------------------------------------------------------

describe("writePkiFile", () => {
  let dir: string;
  before(() => (dir = mkdtempSync(path.join(os.tmpdir(), "qim-certs-"))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  const mode = (file: string) => statSync(file).mode & 0o777;

  it("writes keys 0600 and certificates 0644, creating parent directories, whatever the umask", () => {
    const previous = process.umask(0);
    try {
      const key = path.join(dir, "a", "b", "admin.key");
      const cert = path.join(dir, "a", "b", "admin.crt");
      writePkiFile(key, pki.admin.keyPem, { private: true });
      writePkiFile(cert, pki.admin.certPem, { private: false });
      assert.equal(mode(key), 0o600);
      assert.equal(mode(cert), 0o644);
      assert.equal(readFileSync(key, "utf8"), pki.admin.keyPem);
      assert.equal(readFileSync(cert, "utf8"), pki.admin.certPem);
    } finally {
      process.umask(previous);
    }
  });

  it("refuses to overwrite, naming the path, and leaves the file alone", () => {
    const file = path.join(dir, "exists.key");
    writeFileSync(file, "old", { mode: 0o644 });
    assert.throws(
      () => writePkiFile(file, pki.admin.keyPem, { private: true }),
      (err: unknown) => {
        assert.ok(err instanceof PkiFileExistsError);
        assert.equal(err.path, file);
        assert.ok(err.message.includes(file), err.message);
        assert.match(err.message, /refusing to overwrite/);
        return true;
      },
    );
    assert.equal(readFileSync(file, "utf8"), "old");
    assert.equal(mode(file), 0o644);
  });

  it("with overwrite, replaces the content and tightens an existing key file to 0600", () => {
    const file = path.join(dir, "loose.key");
    writeFileSync(file, "old and longer than nothing", { mode: 0o644 });
    writePkiFile(file, pki.viewer.keyPem, { private: true, overwrite: true });
    assert.equal(mode(file), 0o600);
    assert.equal(readFileSync(file, "utf8"), pki.viewer.keyPem);
  });

  it("writeTestPki writes every fixture entry with the right modes", async () => {
    const files = await writeTestPki(path.join(dir, "pki"));
    assert.deepEqual(Object.keys(files).sort(), [...TEST_PKI_NAMES].sort());
    for (const name of TEST_PKI_NAMES) {
      assert.equal(readFileSync(files[name].certPath, "utf8"), pki[name].certPem);
      assert.equal(readFileSync(files[name].keyPath, "utf8"), pki[name].keyPem);
      assert.equal(mode(files[name].certPath), 0o644);
      assert.equal(mode(files[name].keyPath), 0o600);
    }
    await writeTestPki(path.join(dir, "pki"));
  });
});
