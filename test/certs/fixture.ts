/**
 * The test PKI: every certificate the admin API's tests need, built once per process from four
 * RSA keys (DESIGN §3, STYLE "valid client, no certificate, wrong CA, expired, wrong role").
 */
import path from "node:path";
import {
  createCa,
  generateKeyPair,
  issueClientCert,
  issueNodeCert,
  issueServerCert,
  writePkiFile,
  type PemPair,
  type Role,
} from "../../certs/pki.js";

export interface TestPki {
  /** The trust root of the server and of the clients. */
  ca: PemPair;
  /** An unrelated CA with the same subject as `ca`: only the signature tells them apart. */
  otherCa: PemPair;
  /** hosts localhost, 127.0.0.1, ::1. */
  server: PemPair;
  admin: PemPair;
  operator: PemPair;
  viewer: PemPair;
  drill: PemPair;
  /** admin role, notAfter yesterday. */
  expired: PemPair;
  /** admin role, notBefore tomorrow. */
  notYetValid: PemPair;
  /** admin role, signed by `otherCa`. */
  otherCaAdmin: PemPair;
  /** OU "root", not a role. */
  unknownRole: PemPair;
  /** No OU at all. */
  noRole: PemPair;
  /** The CA's own certificate and key presented as a client certificate. */
  caAsClient: PemPair;
  /** Node certificates (OU node, serverAuth + clientAuth) of nodes "node-a" and "node-b", hosts localhost, 127.0.0.1. */
  nodeA: PemPair;
  nodeB: PemPair;
}

export type TestPkiName = keyof TestPki;

export const TEST_PKI_NAMES: readonly TestPkiName[] = [
  "ca",
  "otherCa",
  "server",
  "admin",
  "operator",
  "viewer",
  "drill",
  "expired",
  "notYetValid",
  "otherCaAdmin",
  "unknownRole",
  "noRole",
  "caAsClient",
  "nodeA",
  "nodeB",
];

/** Client names (subject CN) of the fixture's client certificates. */
export const CLIENT_NAMES = {
  admin: "alice",
  operator: "oscar",
  viewer: "victor",
  drill: "drill-bot",
  expired: "eve-expired",
  notYetValid: "nate-not-yet",
  otherCaAdmin: "mallory",
  unknownRole: "rooty",
  noRole: "nobody",
  nodeA: "node-a",
  nodeB: "node-b",
} as const;

const DAY_MS = 24 * 60 * 60 * 1000;

let built: Promise<TestPki> | undefined;

/** The test PKI of this process (built on first use; RSA key generation dominates, ≈ 0.1–0.5 s a key). */
export function testPki(): Promise<TestPki> {
  built ??= Promise.resolve().then(buildTestPki);
  return built;
}

function buildTestPki(): TestPki {
  const caKeys = generateKeyPair();
  const otherCaKeys = generateKeyPair();
  const serverKeys = generateKeyPair();
  // One key for every client certificate: tests tell them apart by certificate, never by key.
  const clientKeys = generateKeyPair();

  // The same subject for both CAs, so a test against otherCa proves the signature is checked.
  const ca = createCa({ commonName: "qimctl test CA", keyPair: caKeys });
  const otherCa = createCa({ commonName: "qimctl test CA", keyPair: otherCaKeys });
  const server = issueServerCert(ca, { hosts: ["localhost", "127.0.0.1", "::1"], keyPair: serverKeys });

  const client = (name: string, role: Role, extra: { notBefore?: Date; notAfter?: Date } = {}, issuer = ca) =>
    issueClientCert(issuer, { name, role, keyPair: clientKeys, ...extra });
  const now = Date.now();

  return {
    ca,
    otherCa,
    server,
    admin: client(CLIENT_NAMES.admin, "admin"),
    operator: client(CLIENT_NAMES.operator, "operator"),
    viewer: client(CLIENT_NAMES.viewer, "viewer"),
    drill: client(CLIENT_NAMES.drill, "drill"),
    expired: client(CLIENT_NAMES.expired, "admin", { notBefore: new Date(now - 30 * DAY_MS), notAfter: new Date(now - DAY_MS) }),
    notYetValid: client(CLIENT_NAMES.notYetValid, "admin", { notBefore: new Date(now + DAY_MS) }),
    otherCaAdmin: client(CLIENT_NAMES.otherCaAdmin, "admin", {}, otherCa),
    unknownRole: issueClientCert(ca, { name: CLIENT_NAMES.unknownRole, role: "root", allowAnyRole: true, keyPair: clientKeys }),
    noRole: issueClientCert(ca, { name: CLIENT_NAMES.noRole, role: null, allowAnyRole: true, keyPair: clientKeys }),
    caAsClient: ca,
    nodeA: issueNodeCert(ca, { nodeId: CLIENT_NAMES.nodeA, hosts: ["localhost", "127.0.0.1"], keyPair: clientKeys }),
    nodeB: issueNodeCert(ca, { nodeId: CLIENT_NAMES.nodeB, hosts: ["localhost", "127.0.0.1"], keyPair: clientKeys }),
  };
}

export interface PkiPaths {
  certPath: string;
  keyPath: string;
}

export type TestPkiFiles = Record<TestPkiName, PkiPaths>;

/** Writes the test PKI under `dir` as `<name>.crt` (0644) and `<name>.key` (0600); returns the paths. */
export async function writeTestPki(dir: string): Promise<TestPkiFiles> {
  const pkiSet = await testPki();
  const files = {} as TestPkiFiles;
  for (const name of TEST_PKI_NAMES) {
    const paths = { certPath: path.join(dir, `${name}.crt`), keyPath: path.join(dir, `${name}.key`) };
    writePkiFile(paths.certPath, pkiSet[name].certPem, { private: false, overwrite: true });
    writePkiFile(paths.keyPath, pkiSet[name].keyPem, { private: true, overwrite: true });
    files[name] = paths;
  }
  return files;
}
