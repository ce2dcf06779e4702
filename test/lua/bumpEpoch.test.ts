/**
 * lua/bumpEpoch-2.lua: INCR session_projection:epoch and LPUSH a JSON {epoch, reason, by, at}
 * onto its log (newest first), trimmed to the given number of bumps. Returns the new epoch.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { KeySpace } from "../../core/index.js";
import { callScript, type RedisClient } from "../../core/index.js";
import { keyPrefix, useRedis } from "./helpers.js";
import { projectionEpochKey, projectionEpochLogKey } from "../../core/index.js";

const fx = useRedis();

const NOW = 1_700_000_000_123;

interface Bump {
  epoch: number;
  reason: string;
  by: string;
  at: number;
}

class Epoch {
  readonly ks = new KeySpace(keyPrefix());
  readonly epochKey = projectionEpochKey(this.ks);
  readonly logKey = projectionEpochLogKey(this.ks);
  readonly client: RedisClient = fx.store.clientForKey(this.epochKey);

  async bump(reason: string, by: string, at: number, keep = 100): Promise<number> {
    const reply = await callScript(this.client, "bumpEpoch", [this.epochKey, this.logKey], [reason, by, at, keep]);
    assert.equal(reply.length, 1);
    return Number(reply[0]);
  }

  async log(): Promise<Bump[]> {
    return (await this.client.lrange(this.logKey, 0, -1)).map((r) => JSON.parse(r) as Bump);
  }
}

test("bumpEpoch: increments from 0 and logs {epoch, reason, by, at}, newest first", async () => {
  const e = new Epoch();
  assert.equal(await e.client.exists(e.epochKey), 0);
  assert.equal(await e.bump("authority restored", "admin@example", NOW), 1);
  assert.equal(await e.client.get(e.epochKey), "1");
  assert.equal(await e.bump("drill", "projection", NOW + 7), 2);
  assert.equal(await e.client.get(e.epochKey), "2");
  assert.deepEqual(await e.log(), [
    { epoch: 2, reason: "drill", by: "projection", at: NOW + 7 },
    { epoch: 1, reason: "authority restored", by: "admin@example", at: NOW },
  ]);
});

test("bumpEpoch: continues from an existing epoch", async () => {
  const e = new Epoch();
  await e.client.set(e.epochKey, "41");
  assert.equal(await e.bump("r", "b", NOW), 42);
  assert.deepEqual(await e.log(), [{ epoch: 42, reason: "r", by: "b", at: NOW }]);
});

test("bumpEpoch: the log is trimmed to the given keep count, keeping the newest", async () => {
  const e = new Epoch();
  for (let i = 1; i <= 5; i++) assert.equal(await e.bump(`bump ${i}`, "projection", NOW + i, 3), i);
  assert.deepEqual(await e.log(), [
    { epoch: 5, reason: "bump 5", by: "projection", at: NOW + 5 },
    { epoch: 4, reason: "bump 4", by: "projection", at: NOW + 4 },
    { epoch: 3, reason: "bump 3", by: "projection", at: NOW + 3 },
  ]);
  assert.equal(await e.bump("only", "projection", NOW + 6, 1), 6);
  assert.deepEqual(await e.log(), [{ epoch: 6, reason: "only", by: "projection", at: NOW + 6 }]);
  assert.equal(await e.client.get(e.epochKey), "6");
});

test("bumpEpoch: a reason and principal with unicode, quotes, backslashes and control characters round-trip through cjson", async () => {
  const e = new Epoch();
  const reason = `lost "shard" 7 — réparé ✓ 🚀 中文 \\ back\\slash / slash {"json":[1]}\nline2\ttab`;
  const by = `CN="ops, ünïcødé" O='QIM'`;
  assert.equal(await e.bump(reason, by, NOW), 1);
  const [entry] = await e.log();
  assert.deepEqual(entry, { epoch: 1, reason, by, at: NOW });
  // strings stay strings even when they look like numbers
  assert.equal(await e.bump("123", "0", NOW), 2);
  assert.deepEqual((await e.log())[0], { epoch: 2, reason: "123", by: "0", at: NOW });
});
