/**
 * Device tokens (issue 27) on a real redis-server, with real keys (Ed25519 and P-256 from jose):
 * sign and verify, rotation through the key file, expiry by an injected clock (never a sleep),
 * revocation by id and by device (cached entries included), another tenant's or another key's token
 * refused, a few hundred byte mutations each refused with a code, the cache's bound, the list's
 * pages. Expected values come from what each test issued, by hand.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import * as jose from "jose";
import {
  DeviceTokens, generateTokenKey, KeySpace, newUuid, parseTokenKeySet, publicTokenKeys, RedisStore, rotateTokenKeys, staticTokenKeys, TOKEN_KEYS_RECHECK_MS,
  TOKEN_TTL_MAX_MS, tokenMetrics, TokenRefusedError, userTokenKeys, type TokenKeySource, type Uuid,
} from "../../../core/index.js";
import { mulberry32 } from "../../harness/random.js";
import { startRedis, type RedisServer } from "../../harness/redis.js";

const HOUR = 3_600_000;

async function keySetText(...algs: ("EdDSA" | "ES256")[]): Promise<string> {
  let text: string | null = null;
  for (const alg of algs.reverse()) text = (await rotateTokenKeys(text, await generateTokenKey(alg), "test")).text;
  return text!;
}

async function source(text: string): Promise<TokenKeySource> {
  return staticTokenKeys(await parseTokenKeySet(text, "test"));
}

function refusedWith(code: string) {
  return (e: unknown) => {
    assert.ok(e instanceof TokenRefusedError, `a TokenRefusedError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    return true;
  };
}

async function counted(result: string, path: string): Promise<number> {
  const m = await tokenMetrics.verifications.get();
  return m.values.find((v) => v.labels.result === result && v.labels.path === path)?.value ?? 0;
}

describe("device tokens", { timeout: 120_000 }, () => {
  let redis: RedisServer;
  let store: RedisStore;
  let dir: string;
  const space = () => new KeySpace(`tk${newUuid().slice(0, 8)}`);

  before(async () => {
    redis = await startRedis();
    store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-tokens-"));
  });
  after(async () => {
    await store?.close();
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const alg of ["EdDSA", "ES256"] as const) {
    it(`issues and verifies a ${alg} token: header, claims, and what Redis holds`, async () => {
      const now = Date.now();
      const t = await DeviceTokens.open(store, space(), { keys: await source(await keySetText(alg)), now: () => now });
      const tenant = newUuid();
      const user = newUuid();
      const { token, claims } = await t.issuer.issue({ tenant, user, device: "phone-1", ttlMs: HOUR });
      const header = jose.decodeProtectedHeader(token);
      assert.equal(header.alg, alg);
      assert.equal(header.typ, "qim-device+jwt");
      assert.equal(header.kid, claims.keyId);
      assert.equal(claims.expiresAt, Math.floor((now + HOUR) / 1000) * 1000);
      assert.deepEqual(await t.verifier.verify(token), claims);
      assert.deepEqual(await t.verifier.verify(token, { tenant }), claims);
      const listed = await t.issuer.list({ tenant, user, limit: 0, pageToken: "" });
      assert.deepEqual(listed, { tokens: [{ tenant, user, device: "phone-1", tokenId: claims.tokenId, issuedAt: now, expiresAt: claims.expiresAt, keyId: claims.keyId }], nextPageToken: "" });
      // every key expires, and the token string is stored nowhere
      const dump = await store.clientFor("{u000}").keys(`${t.issuer["o"].keys.prefix}:*`);
      assert.ok(dump.length >= 3);
      for (const key of dump) {
        assert.ok((await store.clientForKey(key).pttl(key)) > 0, `${key} has an expiry`);
        const type = await store.clientForKey(key).type(key);
        const text = type === "string" ? await store.clientForKey(key).get(key) : JSON.stringify(type === "hash" ? await store.clientForKey(key).hgetall(key) : await store.clientForKey(key).zrange(key, "0", "-1"));
        assert.ok(!String(text).includes(token.split(".")[2]!), `${key} does not hold the token`);
      }
    });
  }

  it("expiry by the injected clock: refused cold and cached, at the exact instant", async () => {
    let now = Date.now();
    const t = await DeviceTokens.open(store, space(), { keys: await source(await keySetText("EdDSA")), now: () => now });
    const { token, claims } = await t.issuer.issue({ tenant: newUuid(), user: newUuid(), device: "d", ttlMs: 120_000 });
    await t.verifier.verify(token);
    now = claims.expiresAt - 1;
    await t.verifier.verify(token);
    now = claims.expiresAt;
    await assert.rejects(t.verifier.verify(token), refusedWith("TOKEN_EXPIRED"), "the cached entry never outlives the token");
    assert.equal(t.verifier.cached, 0);
    const cold = await DeviceTokens.open(store, space(), { keys: t.source, now: () => now });
    await assert.rejects(cold.verifier.verify(token), refusedWith("TOKEN_EXPIRED"), "cold");
    now = claims.expiresAt - 1000;
    await cold.verifier.verify(token);
  });

  it("verifies a token's signature once: the second verify takes the cache, and a bounded cache evicts the least recently used", async () => {
    const now = Date.now();
    const t = await DeviceTokens.open(store, space(), { keys: await source(await keySetText("EdDSA")), now: () => now, cacheMax: 2 });
    const tenant = newUuid();
    const tokens = await Promise.all([1, 2, 3].map((i) => t.issuer.issue({ tenant, user: newUuid(), device: `d${i}`, ttlMs: HOUR })));
    const cold0 = await counted("ok", "cold");
    const cached0 = await counted("ok", "cached");
    await t.verifier.verify(tokens[0]!.token);
    await t.verifier.verify(tokens[0]!.token);
    await t.verifier.verify(tokens[1]!.token);
    await t.verifier.verify(tokens[0]!.token); // 0 is now the most recent
    await t.verifier.verify(tokens[2]!.token); // evicts 1
    assert.equal(t.verifier.cached, 2);
    await t.verifier.verify(tokens[0]!.token);
    await t.verifier.verify(tokens[1]!.token); // cold again
    assert.equal(await counted("ok", "cold") - cold0, 4);
    assert.equal(await counted("ok", "cached") - cached0, 3);
  });

  it("the cache holds no token: its keys are the tokens' SHA-256, and forget drops by token", async () => {
    const t = await DeviceTokens.open(store, space(), { keys: await source(await keySetText("EdDSA")) });
    const tenant = newUuid();
    const tokens = await Promise.all([1, 2].map((i) => t.issuer.issue({ tenant, user: newUuid(), device: `d${i}`, ttlMs: HOUR })));
    for (const x of tokens) await t.verifier.verify(x.token);
    const keys = [...(t.verifier as unknown as { cache: Map<string, unknown> }).cache.keys()];
    assert.deepEqual(keys.sort(), tokens.map((x) => createHash("sha256").update(x.token).digest("base64url")).sort());
    assert.ok(t.verifier.holds(tokens[0]!.token));
    t.verifier.forget(tokens[0]!.token);
    assert.equal(t.verifier.holds(tokens[0]!.token), false);
    assert.equal(t.verifier.cached, 1);
  });

  it("a reconnect storm: 2,000 concurrent verifies of one token not yet cached check its signature once", async () => {
    const now = Date.now();
    const t = await DeviceTokens.open(store, space(), { keys: await source(await keySetText("EdDSA")), now: () => now });
    const { token, claims } = await t.issuer.issue({ tenant: newUuid(), user: newUuid(), device: "d", ttlMs: HOUR });
    const cold0 = await counted("ok", "cold");
    const cached0 = await counted("ok", "cached");
    const all = await Promise.all(Array.from({ length: 2000 }, () => t.verifier.verify(token)));
    assert.ok(all.every((c) => c.tokenId === claims.tokenId));
    assert.equal(await counted("ok", "cold") - cold0, 1);
    assert.equal(await counted("ok", "cached") - cached0, 1999);
  });

  it("revocation by token id: refused cold and cached, its entry dropped; other tokens of the user stand; a re-run says so", async () => {
    const now = Date.now();
    const t = await DeviceTokens.open(store, space(), { keys: await source(await keySetText("EdDSA")), now: () => now });
    const tenant = newUuid();
    const user = newUuid();
    const a = await t.issuer.issue({ tenant, user, device: "phone", ttlMs: HOUR });
    const b = await t.issuer.issue({ tenant, user, device: "phone", ttlMs: 2 * HOUR });
    await t.verifier.verify(a.token);
    const plan = await t.issuer.revokeToken({ tenant, tokenId: a.claims.tokenId as Uuid, dryRun: true });
    assert.equal(plan.dryRun, true);
    await t.verifier.verify(a.token); // the plan changed nothing
    const r = await t.issuer.revokeToken({ tenant, tokenId: a.claims.tokenId as Uuid });
    assert.deepEqual({ scope: r.scope, changed: r.changed, keptUntil: r.keptUntil, ids: r.tokens.map((x) => x.tokenId) }, { scope: "token", changed: true, keptUntil: a.claims.expiresAt, ids: [a.claims.tokenId] });
    await assert.rejects(t.verifier.verify(a.token), refusedWith("TOKEN_REVOKED"), "cached");
    assert.equal(t.verifier.cached, 0);
    const other = await DeviceTokens.open(store, t.issuer["o"].keys, { keys: t.source, now: () => now });
    await assert.rejects(other.verifier.verify(a.token), refusedWith("TOKEN_REVOKED"), "another node, cold");
    await other.verifier.verify(b.token);
    assert.equal((await t.issuer.revokeToken({ tenant, tokenId: a.claims.tokenId as Uuid })).changed, false, "a re-run");
    assert.deepEqual((await t.issuer.list({ tenant, user, limit: 0, pageToken: "" })).tokens.map((x) => x.tokenId), [b.claims.tokenId]);
    const k = userTokenKeys(t.issuer["o"].keys, tenant, user);
    const pexp = await store.clientFor(k.tag).pexpiretime(k.revoked(a.claims.tokenId));
    assert.equal(pexp, a.claims.expiresAt, "the mark is kept until the token's expiry");
    await assert.rejects(t.issuer.revokeToken({ tenant, tokenId: newUuid() }), (e: unknown) => (e as { code: string }).code === "NOT_FOUND");
  });

  it("revocation by device: every token of the device issued up to then is refused, other devices stand, a later token works", async () => {
    let now = Date.now();
    const t = await DeviceTokens.open(store, space(), { keys: await source(await keySetText("EdDSA")), now: () => now });
    const tenant = newUuid();
    const user = newUuid();
    const p1 = await t.issuer.issue({ tenant, user, device: "phone", ttlMs: HOUR });
    now += 1;
    const p2 = await t.issuer.issue({ tenant, user, device: "phone", ttlMs: HOUR });
    const tab = await t.issuer.issue({ tenant, user, device: "tablet", ttlMs: HOUR });
    await t.verifier.verify(p1.token);
    now += 1;
    const r = await t.issuer.revokeDevice({ tenant, user, device: "phone" });
    assert.deepEqual(r.tokens.map((x) => x.tokenId).sort(), [p1.claims.tokenId, p2.claims.tokenId].sort());
    assert.equal(r.revokedAt, now);
    await assert.rejects(t.verifier.verify(p1.token), refusedWith("TOKEN_REVOKED"));
    await assert.rejects(t.verifier.verify(p2.token), refusedWith("TOKEN_REVOKED"));
    await t.verifier.verify(tab.token);
    now += 1;
    const p3 = await t.issuer.issue({ tenant, user, device: "phone", ttlMs: HOUR });
    await t.verifier.verify(p3.token);
    const k = userTokenKeys(t.issuer["o"].keys, tenant, user);
    assert.equal(await store.clientFor(k.tag).pexpiretime(k.deviceRevoked("phone")), r.revokedAt + TOKEN_TTL_MAX_MS);
  });

  it("rotation through the key file: a token of the old key verifies while the key is in the file, not after it leaves", async () => {
    let now = Date.now();
    const file = path.join(dir, "keys-rotation.json");
    writeFileSync(file, (await rotateTokenKeys(null, await generateTokenKey("EdDSA"), file)).text);
    const lines: string[] = [];
    const t = await DeviceTokens.open(store, space(), { keys: file, now: () => now, log: (l) => lines.push(l) });
    const tenant = newUuid();
    const old = await t.issuer.issue({ tenant, user: newUuid(), device: "d", ttlMs: HOUR });
    await t.verifier.verify(old.token);
    // rotate: a new key first, the old one second
    const r1 = await rotateTokenKeys(await import("node:fs").then((fs) => fs.readFileSync(file, "utf8")), await generateTokenKey("ES256"), file);
    assert.deepEqual(r1.dropped, []);
    writeFileSync(file, r1.text);
    now += TOKEN_KEYS_RECHECK_MS;
    const fresh = await t.issuer.issue({ tenant, user: newUuid(), device: "d", ttlMs: HOUR });
    assert.equal(fresh.claims.keyId, r1.kept[0], "the newest key signs");
    assert.notEqual(fresh.claims.keyId, old.claims.keyId);
    await t.verifier.verify(old.token);
    await t.verifier.verify(fresh.token);
    // rotate again: the first key leaves
    const r2 = await rotateTokenKeys(r1.text, await generateTokenKey("EdDSA"), file);
    assert.deepEqual(r2.dropped, [old.claims.keyId]);
    writeFileSync(file, r2.text);
    now += TOKEN_KEYS_RECHECK_MS;
    await assert.rejects(t.verifier.verify(old.token), refusedWith("TOKEN_INVALID"), "the removed key's token, even though it was cached");
    await t.verifier.verify(fresh.token);
    // a broken file keeps the keys in force
    writeFileSync(file, "{ not json");
    now += TOKEN_KEYS_RECHECK_MS;
    await t.verifier.verify(fresh.token);
    assert.ok(lines.some((l) => /changed but was not loaded, the previous keys stay/.test(l)), lines.join("\n"));
    assert.ok(lines.every((l) => !l.includes('"d"')), "no key material in the log");
  });

  it("refuses another tenant's token, another key's token under a known kid, an unknown kid, and a verify-only node cannot issue", async () => {
    const now = Date.now();
    const text = await keySetText("EdDSA");
    const t = await DeviceTokens.open(store, space(), { keys: await source(text), now: () => now });
    const tenant = newUuid();
    const { token } = await t.issuer.issue({ tenant, user: newUuid(), device: "d", ttlMs: HOUR });
    await assert.rejects(t.verifier.verify(token, { tenant: newUuid() }), refusedWith("TOKEN_INVALID"));
    // a key of its own with the same kid: the signature does not verify
    const kid = JSON.parse(text).keys[0].kid as string;
    const impostor = await generateTokenKey("EdDSA");
    const forged = await DeviceTokens.open(store, space(), { keys: await source(JSON.stringify({ keys: [{ ...impostor, kid }] })), now: () => now });
    const f = await forged.issuer.issue({ tenant, user: newUuid(), device: "d", ttlMs: HOUR });
    await assert.rejects(t.verifier.verify(f.token), refusedWith("TOKEN_INVALID"));
    const stranger = await DeviceTokens.open(store, space(), { keys: await source(await keySetText("EdDSA")), now: () => now });
    await assert.rejects(t.verifier.verify((await stranger.issuer.issue({ tenant, user: newUuid(), device: "d", ttlMs: HOUR })).token), refusedWith("TOKEN_INVALID"));
    // alg none, and a token of the right key but without the device claims
    const none = new jose.UnsecuredJWT({ tid: tenant, dev: "d", ims: now }).setSubject(newUuid()).setJti(newUuid()).setIssuer("qim").setExpirationTime("1h").encode();
    await assert.rejects(t.verifier.verify(none), refusedWith("TOKEN_INVALID"));
    const set = await parseTokenKeySet(text, "t");
    const bare = await new jose.SignJWT({ sub: newUuid() }).setProtectedHeader({ alg: "EdDSA", kid, typ: "qim-device+jwt" }).setIssuer("qim").setExpirationTime("1h").sign(set.signer().signKey);
    await assert.rejects(t.verifier.verify(bare), refusedWith("TOKEN_INVALID"));
    const verifyOnly = await DeviceTokens.open(store, t.issuer["o"].keys, { keys: await source(publicTokenKeys(text)), now: () => now });
    await verifyOnly.verifier.verify(token);
    await assert.rejects(verifyOnly.issuer.issue({ tenant, user: newUuid(), device: "d", ttlMs: HOUR }), (e: unknown) => (e as { code: string }).code === "FAILED_PRECONDITION");
  });

  it("fuzz: 400 byte mutations of a valid token are each refused with a code (or decode to the same bytes), never a crash", async () => {
    const now = Date.now();
    const t = await DeviceTokens.open(store, space(), { keys: await source(await keySetText("EdDSA")), now: () => now });
    const { token } = await t.issuer.issue({ tenant: newUuid(), user: newUuid(), device: "d", ttlMs: HOUR });
    const rnd = mulberry32(27);
    const same = (a: string, b: string) => {
      const pa = a.split("."), pb = b.split(".");
      return pa.length === 3 && pb.length === 3 && pa.every((s, i) => /^[A-Za-z0-9_-]*$/.test(pb[i]!) && Buffer.from(s, "base64url").equals(Buffer.from(pb[i]!, "base64url")));
    };
    const codes = new Map<string, number>();
    let accepted = 0;
    for (let i = 0; i < 400; i++) {
      const chars = [...token];
      const kind = i % 4;
      const at = Math.floor(rnd() * chars.length);
      if (kind === 0) chars[at] = String.fromCharCode(Math.floor(rnd() * 256));
      else if (kind === 1) chars.splice(at, 1);
      else if (kind === 2) chars.splice(at, 0, String.fromCharCode(Math.floor(rnd() * 256)));
      else chars.splice(at);
      const mutated = chars.join("");
      if (mutated === token) continue;
      try {
        await t.verifier.verify(mutated);
        assert.ok(same(token, mutated), `accepted a mutation that changes the token's bytes: ${mutated}`);
        accepted += 1;
      } catch (e) {
        assert.ok(e instanceof TokenRefusedError, `mutation ${i} (${kind}) threw ${String(e)}`);
        codes.set(e.code, (codes.get(e.code) ?? 0) + 1);
        if (mutated.length > 40) assert.ok(!e.message.includes(mutated.slice(-40)), "the message never quotes the token");
      }
    }
    assert.ok((codes.get("TOKEN_INVALID") ?? 0) > 350, JSON.stringify([...codes]));
    assert.ok(accepted < 40, `${accepted} accepted`);
    for (const junk of ["", "a.b.c", "...", "x".repeat(5000), "eyJhbGciOiJub25lIn0.e30.", Buffer.alloc(300, 0xff).toString("latin1")]) {
      await assert.rejects(t.verifier.verify(junk), refusedWith("TOKEN_INVALID"));
    }
    await assert.rejects(t.verifier.verify(42 as unknown as string), refusedWith("TOKEN_INVALID"));
  });

  it("lists a user's live tokens in keyset pages; a cursor from another page form is refused", async () => {
    const now = Date.now();
    const t = await DeviceTokens.open(store, space(), { keys: await source(await keySetText("EdDSA")), now: () => now });
    const tenant = newUuid();
    const user = newUuid();
    const issued = [];
    for (let i = 0; i < 7; i++) issued.push((await t.issuer.issue({ tenant, user, device: `d${i % 3}`, ttlMs: HOUR + (i % 2) * 60_000 })).claims);
    const expected = issued.map((c) => [c.expiresAt, c.tokenId] as const).sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : 1)).map((x) => x[1]);
    const seen: string[] = [];
    let pageToken = "";
    let pages = 0;
    do {
      const p = await t.issuer.list({ tenant, user, limit: 3, pageToken });
      seen.push(...p.tokens.map((x) => x.tokenId));
      pageToken = p.nextPageToken;
      pages += 1;
    } while (pageToken !== "");
    assert.deepEqual(seen, expected);
    assert.equal(pages, 3);
    await assert.rejects(t.issuer.list({ tenant, user, limit: 3, pageToken: "nope" }), (e: unknown) => (e as { code: string }).code === "INVALID_ARGUMENT");
    await assert.rejects(t.issuer.list({ tenant, user, limit: 5000, pageToken: "" }), (e: unknown) => (e as { code: string }).code === "INVALID_ARGUMENT");
  });
});
