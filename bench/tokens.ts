/**
 * bench/tokens — device token verification (issue 27) on one private redis-server, in one run:
 *   cold     a fresh TokenVerifier verifying N distinct tokens once each: jose signature check +
 *            the revocation MGET (what the first connection of a device costs)
 *   cached   the same verifier verifying the same N tokens again: an LRU hit + the revocation MGET
 *            (what a reconnect costs)
 *   mget     the baseline: the revocation MGET alone on the same keys (the floor of a cached verify)
 *   sig      jose.jwtVerify alone, no Redis (the signature's own cost)
 *   storm    10,000 verifies of ONE token, 64 in flight, on a fresh verifier: how many signatures
 *            were checked (qim_token_verifications_total{path="cold"}) — the reconnect storm
 * for EdDSA (Ed25519) and ES256 (P-256), 64 verifies in flight, rounds alternating the paths,
 * medians printed. The figure is the ratio cached/cold of one run; wall-clock rates move between
 * machines, the ratios of one run do not.
 * Usage: node dist/bench/tokens.js [--tokens N] [--rounds R] [--json]
 */
import * as jose from "jose";
import {
  DeviceTokens, generateTokenKey, KeySpace, newUuid, parseTokenKeySet, RedisStore, rotateTokenKeys, staticTokenKeys, tokenMetrics, userTokenKeys,
  TOKEN_ISSUER, TOKEN_TYPE, type DeviceClaims, type TokenAlgorithm,
} from "../core/index.js";
import { startRedis } from "../test/harness/redis.js";
import { flag } from "./args.js";

const args = process.argv.slice(2);
const JSON_ONLY = args.includes("--json");
const TOKENS = flag("--tokens", 2000);
const ROUNDS = flag("--rounds", 3);
const IN_FLIGHT = 64;
const STORM = 10_000;

const say = (line: string) => { if (!JSON_ONLY) process.stderr.write(`${line}\n`); };
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Runs `fn` over every item with IN_FLIGHT in flight; returns items per second. */
async function rate<T>(items: readonly T[], fn: (item: T) => Promise<unknown>): Promise<number> {
  let next = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
  return items.length / (Number(process.hrtime.bigint() - t0) / 1e9);
}

async function coldCount(): Promise<number> {
  return (await tokenMetrics.verifications.get()).values.filter((v) => v.labels.path === "cold").reduce((s, v) => s + v.value, 0);
}

const redis = await startRedis();
const store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
const results: Record<string, Record<string, number>> = {};
try {
  for (const alg of ["EdDSA", "ES256"] as TokenAlgorithm[]) {
    const set = await parseTokenKeySet((await rotateTokenKeys(null, await generateTokenKey(alg), "bench")).text, "bench");
    const source = staticTokenKeys(set);
    const space = new KeySpace(`bt${newUuid().slice(0, 8)}`);
    const issuer = new DeviceTokens(store, space, { source });
    const tenant = newUuid();
    const issued: { token: string; claims: DeviceClaims }[] = [];
    for (let i = 0; i < TOKENS; i++) issued.push(await issuer.issuer.issue({ tenant, user: newUuid(), device: `d${i}`, ttlMs: 3_600_000 }));
    const tokens = issued.map((x) => x.token);
    const k0 = set.keys[0]!;
    const r = { cold: [] as number[], cached: [] as number[], mget: [] as number[], sig: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      const fresh = new DeviceTokens(store, space, { source });
      r.cold.push(await rate(tokens, (t) => fresh.verifier.verify(t)));
      r.cached.push(await rate(tokens, (t) => fresh.verifier.verify(t)));
      r.mget.push(await rate(issued, ({ claims: c }) => {
        const k = userTokenKeys(space, c.tenant, c.user);
        return store.clientFor(k.tag).mget(k.revoked(c.tokenId), k.deviceRevoked(c.device));
      }));
      r.sig.push(await rate(tokens, (t) => jose.jwtVerify(t, k0.verifyKey, { algorithms: [k0.alg], issuer: TOKEN_ISSUER, typ: TOKEN_TYPE })));
      say(`${alg} round ${round + 1}: cold ${r.cold.at(-1)!.toFixed(0)}/s, cached ${r.cached.at(-1)!.toFixed(0)}/s, mget ${r.mget.at(-1)!.toFixed(0)}/s, sig ${r.sig.at(-1)!.toFixed(0)}/s`);
    }
    const stormVerifier = new DeviceTokens(store, space, { source });
    const before = await coldCount();
    const stormRate = await rate(Array.from({ length: STORM }, () => tokens[0]!), (t) => stormVerifier.verifier.verify(t));
    const stormSignatures = await coldCount() - before;
    const m = { cold: median(r.cold), cached: median(r.cached), mget: median(r.mget), sig: median(r.sig) };
    results[alg] = {
      coldPerSec: Math.round(m.cold), cachedPerSec: Math.round(m.cached), mgetPerSec: Math.round(m.mget), signaturePerSec: Math.round(m.sig),
      cachedOverCold: Number((m.cached / m.cold).toFixed(2)), cachedOverMget: Number((m.cached / m.mget).toFixed(2)),
      stormVerifies: STORM, stormSignaturesChecked: stormSignatures, stormPerSec: Math.round(stormRate),
    };
  }
} finally {
  await store.close();
  await redis.stop();
}
const out = { tokens: TOKENS, rounds: ROUNDS, inFlight: IN_FLIGHT, results };
if (JSON_ONLY) process.stdout.write(`${JSON.stringify(out)}\n`);
else {
  for (const [alg, x] of Object.entries(results)) {
    process.stdout.write(`${alg}: cold ${x.coldPerSec}/s, cached ${x.cachedPerSec}/s (${x.cachedOverCold}x cold; ${x.cachedOverMget}x of the bare revocation MGET at ${x.mgetPerSec}/s), signature alone ${x.signaturePerSec}/s; storm: ${x.stormVerifies} verifies of one token checked ${x.stormSignaturesChecked} signature(s) at ${x.stormPerSec}/s\n`);
  }
}
