/**
 * The admin API's PKI (DESIGN §3, §5): a CA, a server certificate and client certificates whose
 * subject CN is the operator's name and OU the role. node-forge builds and signs; Node's TLS is
 * the verifier these certificates are made for, so every choice below is one OpenSSL accepts.
 */
import { createHash, createPrivateKey, randomBytes, sign, X509Certificate, type KeyObject } from "node:crypto";
import { closeSync, fchmodSync, mkdirSync, openSync, writeFileSync } from "node:fs";
import { isIP } from "node:net";
import path from "node:path";
import forge from "node-forge";

const { pki } = forge;

import { ROLES, type Role } from "../server/pipeline/auth.js";

export { ROLES, type Role };

export function isRole(value: unknown): value is Role {
  return typeof value === "string" && (ROLES as readonly string[]).includes(value);
}

/** A certificate and its private key, both PEM. */
export interface PemPair {
  certPem: string;
  keyPem: string;
}

export type KeyPair = forge.pki.rsa.KeyPair;

export interface CaOptions {
  /** Default "qimctl CA". */
  commonName?: string;
  /** Default 3650. */
  days?: number;
  keyPair?: KeyPair;
}

export interface ServerCertOptions {
  /** DNS names and IP addresses (v4 or v6); the first one is also the subject CN. */
  hosts: string[];
  /** Default 825. */
  days?: number;
  keyPair?: KeyPair;
}

interface ClientCertCommon {
  /** Subject CN: the operator's name. */
  name: string;
  /** Default 365; ignored when `notAfter` is given. */
  days?: number;
  /** Default: now minus 5 minutes (clock skew between the CLI's and the server's hosts). */
  notBefore?: Date;
  /** Default: `notBefore` + `days`. */
  notAfter?: Date;
  keyPair?: KeyPair;
}

/**
 * A client certificate's options. `role` must be one of ROLES; tests that need a certificate the
 * server must refuse (an unknown OU, or none: `role: null`) say so with `allowAnyRole: true`.
 */
export type ClientCertOptions =
  | (ClientCertCommon & { role: Role; allowAnyRole?: false })
  | (ClientCertCommon & { role: string | null; allowAnyRole: true });

export interface CertificateInfo {
  subject: { CN: string | null; OU: string | null };
  issuerCN: string | null;
  /** Uppercase hex without separators, as `X509Certificate.serialNumber`. */
  serialHex: string;
  notBefore: Date;
  notAfter: Date;
  /** SHA-256 of the DER, "AA:BB:…", as `X509Certificate.fingerprint256` and grpc-js report it. */
  fingerprint256: string;
  isCa: boolean;
  /** DNS names and IP addresses (IPv6 compressed, lowercase) of the subjectAltName, in order. */
  sans: string[];
}

export interface WritePkiFileOptions {
  /** A private key: mode 0600. Otherwise (a certificate) 0644. */
  private: boolean;
  /** Replace an existing file. Default false: an existing file is an error. */
  overwrite?: boolean;
}

/** `writePkiFile` found a file where it was asked to write and was not told to overwrite it. */
export class PkiFileExistsError extends Error {
  readonly code = "EEXIST";
  constructor(readonly path: string) {
    super(`refusing to overwrite ${path}: the file already exists (pass overwrite to replace it)`);
    this.name = "PkiFileExistsError";
  }
}

const DAY_MS = 24 * 60 * 60 * 1000;
const CLOCK_SKEW_MS = 5 * 60 * 1000;
// X.520 ub-common-name / ub-organizational-unit-name.
const MAX_NAME_LENGTH = 64;

/** An RSA-2048 key pair (node-forge uses Node's native generator when it can). */
export function generateKeyPair(): KeyPair {
  return pki.rsa.generateKeyPair({ bits: 2048, e: 0x10001 });
}

export function createCa(options: CaOptions = {}): PemPair {
  const commonName = options.commonName ?? "qimctl CA";
  checkName("commonName", commonName);
  const keys = options.keyPair ?? generateKeyPair();
  const cert = newCertificate(keys, validity(options.days ?? 3650));
  const subject = [utf8Attribute("CN", commonName)];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: "basicConstraints", critical: true, cA: true },
    { name: "keyUsage", critical: true, keyCertSign: true, cRLSign: true },
    { name: "subjectKeyIdentifier" },
  ]);
  const keyPem = pki.privateKeyToPem(keys.privateKey);
  return { certPem: signToPem(cert, createPrivateKey(keyPem)), keyPem };
}

export function issueServerCert(ca: PemPair, options: ServerCertOptions): PemPair {
  const { hosts } = options;
  if (!Array.isArray(hosts) || hosts.length === 0) throw new Error("hosts: at least one host name or IP address is required");
  const altNames = hosts.map(subjectAltName);
  checkName("hosts[0]", hosts[0]!);
  return issue(ca, options.keyPair, validity(options.days ?? 825), [utf8Attribute("CN", hosts[0]!)], [
    { name: "keyUsage", critical: true, digitalSignature: true, keyEncipherment: true },
    { name: "extKeyUsage", serverAuth: true },
    { name: "subjectAltName", altNames },
  ]);
}

export function issueClientCert(ca: PemPair, options: ClientCertOptions): PemPair {
  const { name, role } = options;
  checkName("name", name);
  if (options.allowAnyRole !== true && !isRole(role)) {
    throw new Error(`role: must be one of ${ROLES.join(", ")}, got ${JSON.stringify(role)}`);
  }
  if (role !== null) checkName("role", role);
  const subject = [utf8Attribute("CN", name)];
  if (role !== null) subject.push(utf8Attribute("OU", role));

  const notBefore = options.notBefore ?? new Date(Date.now() - CLOCK_SKEW_MS);
  const notAfter = options.notAfter ?? new Date(notBefore.getTime() + checkDays(options.days ?? 365) * DAY_MS);
  return issue(ca, options.keyPair, checkValidity(notBefore, notAfter), subject, [
    { name: "keyUsage", critical: true, digitalSignature: true },
    { name: "extKeyUsage", clientAuth: true },
  ]);
}

export interface NodeCertOptions {
  /** Subject CN: the node id (the principal the node service logs). */
  nodeId: string;
  /** DNS names and IP addresses of the node's RPC address (its subjectAltName): peers verify them. */
  hosts: string[];
  /** Default 825, as a server certificate. */
  days?: number;
  keyPair?: KeyPair;
}

/**
 * A node certificate (issue 11): one certificate an engine server presents both as the server of
 * its NodeService and as the client of its peers' — extKeyUsage serverAuth and clientAuth, the
 * node's addresses as SANs, CN = the node id, OU = `node` (the role only the node service admits).
 */
export function issueNodeCert(ca: PemPair, options: NodeCertOptions): PemPair {
  const { nodeId, hosts } = options;
  checkName("nodeId", nodeId);
  if (!Array.isArray(hosts) || hosts.length === 0) throw new Error("hosts: at least one host name or IP address is required");
  const altNames = hosts.map(subjectAltName);
  return issue(ca, options.keyPair, validity(options.days ?? 825), [utf8Attribute("CN", nodeId), utf8Attribute("OU", "node")], [
    { name: "keyUsage", critical: true, digitalSignature: true, keyEncipherment: true },
    { name: "extKeyUsage", serverAuth: true, clientAuth: true },
    { name: "subjectAltName", altNames },
  ]);
}

export function certificateInfo(certPem: string): CertificateInfo {
  const der = pemToDer(certPem);
  const cert = pki.certificateFromPem(certPem);
  const basic = cert.getExtension("basicConstraints") as { cA?: boolean } | undefined;
  const san = cert.getExtension("subjectAltName") as { altNames?: AltName[] } | undefined;
  return {
    subject: { CN: fieldValue(cert.subject, "CN"), OU: fieldValue(cert.subject, "OU") },
    issuerCN: fieldValue(cert.issuer, "CN"),
    serialHex: cert.serialNumber.toUpperCase(),
    notBefore: cert.validity.notBefore,
    notAfter: cert.validity.notAfter,
    fingerprint256: colonHex(createHash("sha256").update(der).digest()),
    isCa: basic?.cA === true,
    sans: (san?.altNames ?? []).flatMap((n) => (n.type === 7 ? (n.ip ? [n.ip] : []) : typeof n.value === "string" ? [n.value] : [])),
  };
}

/**
 * Writes a PEM file, creating its directory. A private key gets mode 0600 before any byte of it
 * is written, also when an existing file (perhaps 0644) is overwritten; the umask does not apply.
 */
export function writePkiFile(file: string, pem: string, options: WritePkiFileOptions): void {
  const mode = options.private ? 0o600 : 0o644;
  mkdirSync(path.dirname(file), { recursive: true });
  let fd: number;
  try {
    // "wx" makes the existence check and the creation one step.
    fd = openSync(file, options.overwrite ? "w" : "wx", mode);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") throw new PkiFileExistsError(file);
    throw err;
  }
  try {
    fchmodSync(fd, mode);
    writeFileSync(fd, pem);
  } finally {
    closeSync(fd);
  }
}

// ---------------------------------------------------------------------------------------------

type Extension = Record<string, unknown> & { name: string };
type AltName = { type: number; value?: string; ip?: string };

function issue(
  ca: PemPair,
  keyPair: KeyPair | undefined,
  period: { notBefore: Date; notAfter: Date },
  subject: forge.pki.CertificateField[],
  extensions: Extension[],
): PemPair {
  const caCert = pki.certificateFromPem(ca.certPem);
  const caKey = createPrivateKey(ca.keyPem);
  const caX509 = new X509Certificate(ca.certPem);
  if (!caX509.ca) throw new Error("ca: the certificate is not a CA certificate (basicConstraints cA is not set)");
  if (!caX509.checkPrivateKey(caKey)) throw new Error("ca: the private key does not belong to the CA certificate");
  const keys = keyPair ?? generateKeyPair();
  const cert = newCertificate(keys, period);
  cert.setSubject(subject);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: "basicConstraints", cA: false },
    ...extensions,
    { name: "subjectKeyIdentifier" },
    { name: "authorityKeyIdentifier", keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
  ]);
  return { certPem: signToPem(cert, caKey), keyPem: pki.privateKeyToPem(keys.privateKey) };
}

function newCertificate(keys: KeyPair, period: { notBefore: Date; notAfter: Date }): forge.pki.Certificate {
  const cert = pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = randomSerialHex();
  cert.validity.notBefore = period.notBefore;
  cert.validity.notAfter = period.notAfter;
  return cert;
}

/**
 * What forge's `cert.sign(key, sha256)` does, with the RSA signature made by OpenSSL: forge's
 * pure-JS private-key operation costs ≈ 50 ms a certificate, a quarter of the test PKI's build.
 */
function signToPem(cert: forge.pki.Certificate, signer: KeyObject): string {
  cert.signatureOid = cert.siginfo.algorithmOid = pki.oids.sha256WithRSAEncryption!;
  cert.tbsCertificate = (pki as unknown as { getTBSCertificate(c: forge.pki.Certificate): forge.asn1.Asn1 }).getTBSCertificate(cert);
  const tbs = Buffer.from(forge.asn1.toDer(cert.tbsCertificate).getBytes(), "binary");
  cert.signature = sign("sha256", tbs, signer).toString("binary");
  return pki.certificateToPem(cert);
}

/**
 * 16 random bytes, positive and minimally encoded: forge writes the bytes as the DER INTEGER
 * as they are, so a high first bit would make the serial negative and a zero first byte would be
 * padding that OpenSSL refuses.
 */
function randomSerialHex(): string {
  const bytes = randomBytes(16);
  bytes[0] = bytes[0]! & 0x7f || 0x01;
  return bytes.toString("hex");
}

function validity(days: number): { notBefore: Date; notAfter: Date } {
  const notBefore = new Date(Date.now() - CLOCK_SKEW_MS);
  return { notBefore, notAfter: new Date(notBefore.getTime() + checkDays(days) * DAY_MS) };
}

function checkDays(days: number): number {
  if (!Number.isInteger(days) || days < 1) throw new Error(`days: must be a positive integer, got ${days}`);
  return days;
}

function checkValidity(notBefore: Date, notAfter: Date): { notBefore: Date; notAfter: Date } {
  if (Number.isNaN(notBefore.getTime())) throw new Error("notBefore: invalid date");
  if (Number.isNaN(notAfter.getTime())) throw new Error("notAfter: invalid date");
  if (notAfter.getTime() <= notBefore.getTime()) throw new Error("notAfter: must be later than notBefore");
  return { notBefore, notAfter };
}

function checkName(field: string, value: string): void {
  if (typeof value !== "string" || value.trim() === "") throw new Error(`${field}: must be a non-empty string`);
  if ([...value].length > MAX_NAME_LENGTH) throw new Error(`${field}: at most ${MAX_NAME_LENGTH} characters`);
  if (/[\u0000-\u001f\u007f]/.test(value)) throw new Error(`${field}: control characters are not allowed`);
}

/** UTF8String rather than forge's default PrintableString, which cannot hold "@", "_" or "é". */
function utf8Attribute(shortName: "CN" | "OU", value: string): forge.pki.CertificateField {
  return { shortName, value, valueTagClass: forge.asn1.Type.UTF8 as unknown as forge.asn1.Class };
}

function fieldValue(name: forge.pki.Certificate["subject"], shortName: string): string | null {
  const field = name.getField(shortName) as { value: string; valueTagClass?: number } | null;
  if (!field) return null;
  // forge hands back the raw bytes of the value; only UTF8String needs decoding.
  return field.valueTagClass === forge.asn1.Type.UTF8 ? forge.util.decodeUtf8(field.value) : field.value;
}

const DNS_NAME = /^(\*\.)?[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*\.?$/i;

function subjectAltName(host: string): AltName {
  switch (isIP(host)) {
    case 4:
      return { type: 7, value: Buffer.from(host.split(".").map(Number)).toString("binary") };
    case 6:
      return { type: 7, value: ipv6Bytes(host).toString("binary") };
    default:
      if (typeof host !== "string" || host.length > 253 || !DNS_NAME.test(host)) {
        throw new Error(`hosts: ${JSON.stringify(host)} is neither a DNS name nor an IP address`);
      }
      return { type: 2, value: host.toLowerCase() };
  }
}

/** 16 bytes of an address `net.isIP` accepted as v6 (forge's parser misreads "::ffff:1.2.3.4"). */
function ipv6Bytes(address: string): Buffer {
  let text = address.replace(/%.*$/, "");
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4[1]!.split(".").map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes("::") ? text.split("::") : [text, undefined];
  const headGroups = head ? head.split(":") : [];
  const tailGroups = tail ? tail.split(":") : [];
  const groups =
    tail === undefined ? headGroups : [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill("0"), ...tailGroups];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

function pemToDer(certPem: string): Buffer {
  const block = forge.pem.decode(certPem).find((b) => b.type === "CERTIFICATE");
  if (!block) throw new Error("not a PEM certificate");
  return Buffer.from(block.body, "binary");
}

function colonHex(bytes: Buffer): string {
  return bytes.toString("hex").toUpperCase().match(/../g)!.join(":");
}
