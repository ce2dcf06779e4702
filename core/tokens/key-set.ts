import { randomBytes } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import * as jose from "jose";
import { FailedPreconditionError, InvalidArgumentError, TOKEN_ACTIVE_KEYS_MAX } from "../base/index.js";
import { tokenMetrics } from "./metrics.js";

/**
 * The signing keys of device tokens (issue 27, docs/operator-guide.md "Device tokens"): a JSON Web
 * Key Set file, newest key first, at most TOKEN_ACTIVE_KEYS_MAX keys. The first key signs; every key
 * verifies (a token signed by the previous key keeps working until that key leaves the file). A key
 * is a private JWK (`d` present; needed by a node that issues) or a public one (a node that only
 * verifies). Private keys never travel in argv or logs: the file is read by path, and what is logged
 * or answered is key ids only.
 */

/** Signature algorithms a key may use: Ed25519 (EdDSA) and P-256 (ES256). */
export const TOKEN_ALGORITHMS = ["EdDSA", "ES256"] as const;
export type TokenAlgorithm = (typeof TOKEN_ALGORITHMS)[number];

/** A key id: 1 to 64 of A-Z a-z 0-9 . _ - (it is in every token's header and in audit lines). */
const KID_RE = /^[A-Za-z0-9._-]{1,64}$/;

/** How often, at most, the key file's modification time is looked at (a changed file is read again). */
export const TOKEN_KEYS_RECHECK_MS = 1000;

export interface TokenKey {
  kid: string;
  alg: TokenAlgorithm;
  verifyKey: jose.CryptoKey;
  /** null: a public key (this node verifies with it but cannot sign). */
  signKey: jose.CryptoKey | null;
}

/** A loaded key set: `keys[0]` signs. */
export class TokenKeySet {
  private readonly byKid: Map<string, TokenKey>;
  constructor(readonly keys: readonly TokenKey[]) {
    this.byKid = new Map(keys.map((k) => [k.kid, k]));
  }
  /** The key a token names, or undefined (an unknown or removed key). */
  key(kid: string): TokenKey | undefined {
    return this.byKid.get(kid);
  }
  /** The newest key, which signs; refused when it is a public key. */
  signer(): TokenKey & { signKey: jose.CryptoKey } {
    const k = this.keys[0]!;
    if (k.signKey === null) throw new FailedPreconditionError(`the newest token key ${k.kid} is a public key: this node verifies tokens but cannot issue them (give it the private key file)`);
    return k as TokenKey & { signKey: jose.CryptoKey };
  }
  get kids(): string[] {
    return this.keys.map((k) => k.kid);
  }
}

function algOf(jwk: Record<string, unknown>, where: string): TokenAlgorithm {
  const alg = jwk.alg ?? (jwk.kty === "OKP" && jwk.crv === "Ed25519" ? "EdDSA" : jwk.kty === "EC" && jwk.crv === "P-256" ? "ES256" : undefined);
  if (alg === "EdDSA" && jwk.kty === "OKP" && jwk.crv === "Ed25519") return alg;
  if (alg === "ES256" && jwk.kty === "EC" && jwk.crv === "P-256") return alg;
  throw new InvalidArgumentError("keys", `${where}: a token key is Ed25519 (kty OKP, crv Ed25519, alg EdDSA) or P-256 (kty EC, crv P-256, alg ES256)`);
}

/** Parses a key set file's text; `source` names it in errors (never its contents). */
export async function parseTokenKeySet(text: string, source: string): Promise<TokenKeySet> {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new InvalidArgumentError("keys", `${source} is not JSON (a JSON Web Key Set: {"keys": [...]}, made by qimctl token keygen)`);
  }
  const list = (doc as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(list) || list.length === 0) throw new InvalidArgumentError("keys", `${source} has no "keys" array with at least one key`);
  if (list.length > TOKEN_ACTIVE_KEYS_MAX) throw new InvalidArgumentError("keys", `${source} holds ${list.length} keys; at most ${TOKEN_ACTIVE_KEYS_MAX} are active (the newest signs, the previous one still verifies)`);
  const keys: TokenKey[] = [];
  for (const [i, raw] of list.entries()) {
    const where = `${source} key ${i + 1}`;
    if (typeof raw !== "object" || raw === null) throw new InvalidArgumentError("keys", `${where} is not an object`);
    const jwk = raw as Record<string, unknown>;
    if (typeof jwk.kid !== "string" || !KID_RE.test(jwk.kid)) throw new InvalidArgumentError("keys", `${where}: kid must be 1 to 64 of A-Z a-z 0-9 . _ -`);
    if (keys.some((k) => k.kid === jwk.kid)) throw new InvalidArgumentError("keys", `${where}: kid ${jwk.kid} appears twice`);
    const alg = algOf(jwk, where);
    const pub: jose.JWK = alg === "EdDSA" ? { kty: "OKP", crv: "Ed25519", x: jwk.x as string } : { kty: "EC", crv: "P-256", x: jwk.x as string, y: jwk.y as string };
    try {
      const verifyKey = (await jose.importJWK(pub, alg)) as jose.CryptoKey;
      const signKey = typeof jwk.d === "string" ? (await jose.importJWK({ ...pub, d: jwk.d }, alg)) as jose.CryptoKey : null;
      keys.push({ kid: jwk.kid, alg, verifyKey, signKey });
    } catch {
      // jose's message may quote key material: say only which key
      throw new InvalidArgumentError("keys", `${where} (kid ${jwk.kid}) is not a valid ${alg} key`);
    }
  }
  return new TokenKeySet(keys);
}

/** A new key as a private JWK with its kid (`tok-YYYYMMDD-<8 hex>`). */
export async function generateTokenKey(alg: TokenAlgorithm = "EdDSA", now = new Date()): Promise<jose.JWK & { kid: string }> {
  const { privateKey } = await jose.generateKeyPair(alg, { extractable: true, ...(alg === "EdDSA" ? { crv: "Ed25519" } : {}) });
  const jwk = await jose.exportJWK(privateKey);
  const kid = `tok-${now.toISOString().slice(0, 10).replace(/-/g, "")}-${randomBytes(4).toString("hex")}`;
  return { ...jwk, kid, alg, use: "sig" };
}

/**
 * A rotation: the new key first, then the previous newest; older keys leave the set (named in
 * `dropped`, so the operator knows which tokens stop verifying). `existing` is the file's text, or
 * null for a first key.
 */
export async function rotateTokenKeys(existing: string | null, added: jose.JWK & { kid: string }, source: string): Promise<{ text: string; kept: string[]; dropped: string[] }> {
  let previous: Record<string, unknown>[] = [];
  if (existing !== null) {
    await parseTokenKeySet(existing, source);
    previous = (JSON.parse(existing) as { keys: Record<string, unknown>[] }).keys;
  }
  const keys = [added, ...previous].slice(0, TOKEN_ACTIVE_KEYS_MAX);
  const dropped = previous.slice(TOKEN_ACTIVE_KEYS_MAX - 1).map((k) => String(k.kid));
  return { text: `${JSON.stringify({ keys }, null, 2)}\n`, kept: keys.map((k) => String(k.kid)), dropped };
}

/** The public half of a key set's text (for nodes that only verify). */
export function publicTokenKeys(text: string): string {
  const keys = (JSON.parse(text) as { keys: Record<string, unknown>[] }).keys.map(({ d: _d, ...pub }) => pub);
  return `${JSON.stringify({ keys }, null, 2)}\n`;
}

/** Where the verifier and the issuer get the current keys. */
export interface TokenKeySource {
  current(): Promise<TokenKeySet>;
  /** Changes each time the set changes (the verifier drops its cache: a removed key must stop verifying). */
  readonly version: number;
}

/** A fixed set (tests, benches, programs that manage keys themselves). */
export function staticTokenKeys(set: TokenKeySet): TokenKeySource {
  return { current: async () => set, version: 0 };
}

/**
 * The key file of a node (`tokens.keys`): read at start-up (a bad file fails the start), then read
 * again when its modification time or size changes, looked at most every TOKEN_KEYS_RECHECK_MS. A
 * changed file that does not parse keeps the previous keys and logs one line (never the contents).
 * So a rotation needs no restart: write the new file (qimctl token keygen), every node picks it up
 * within a second.
 */
export class TokenKeyFile implements TokenKeySource {
  version = 0;
  private set!: TokenKeySet;
  private stamp = "";
  private checkedAt = 0;
  private checking: Promise<void> | null = null;

  private constructor(readonly path: string, private readonly log: (line: string) => void, private readonly now: () => number) {}

  static async open(path: string, opts: { log?: (line: string) => void; now?: () => number } = {}): Promise<TokenKeyFile> {
    const f = new TokenKeyFile(path, opts.log ?? (() => {}), opts.now ?? Date.now);
    const s = await stat(path).catch(() => { throw new InvalidArgumentError("tokens.keys", `cannot read the token key file ${path}`); });
    f.set = await parseTokenKeySet(await readFile(path, "utf8"), path);
    f.stamp = `${s.mtimeMs}:${s.size}`;
    f.checkedAt = f.now();
    return f;
  }

  async current(): Promise<TokenKeySet> {
    if (this.now() - this.checkedAt >= TOKEN_KEYS_RECHECK_MS) {
      this.checking ??= this.recheck().finally(() => { this.checking = null; });
      await this.checking;
    }
    return this.set;
  }

  private async recheck(): Promise<void> {
    this.checkedAt = this.now();
    try {
      const s = await stat(this.path);
      const stamp = `${s.mtimeMs}:${s.size}`;
      if (stamp === this.stamp) return;
      this.stamp = stamp;
      this.set = await parseTokenKeySet(await readFile(this.path, "utf8"), this.path);
      this.version += 1;
      tokenMetrics.keyReloads.inc({ result: "ok" });
      this.log(`token keys: reloaded ${this.path}: ${this.set.kids.join(", ")} (${this.set.kids[0]} signs)`);
    } catch (err) {
      tokenMetrics.keyReloads.inc({ result: "refused" });
      this.log(`token keys: ${this.path} changed but was not loaded, the previous keys stay: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}
