/**
 * RedisStore while its redis-server is away: requests are refused (never left hanging), the client
 * keeps trying to reconnect at most RECONNECT_MAX_DELAY_MS apart however long the outage lasts, and
 * it is back by itself once the server is.
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { RECONNECT_MAX_DELAY_MS, RedisStore } from "../../core/index.js";
import { startRedis, type RedisServer } from "../harness/redis.js";

describe("RedisStore reconnecting", { timeout: 120_000 }, () => {
  let redis: RedisServer | undefined;
  let store: RedisStore | undefined;
  after(async () => {
    await store?.close();
    await redis?.stop();
  });

  it("attempts stay at most 0.5 s apart during a long outage; a request meanwhile is refused; back by itself afterwards", async () => {
    redis = await startRedis();
    store = new RedisStore({ kind: "instances", addrs: [redis.addr] }, { commandTimeoutMs: 30_000 });
    const client = store.clients()[0]!;
    await client.set("k", "before");

    const delays: number[] = [];
    client.on("reconnecting", (delay: number) => delays.push(delay));
    await redis.kill9();

    // ioredis's own back-off would pass 0.5 s at its 11th attempt and reach 2 s at its 40th:
    // wait for the 14th, then the delays must have levelled off at the cap
    const refused = await client.get("k").then(() => "answered", (err: Error) => err.message);
    assert.match(refused, /max retries per request|Connection is closed|ECONNREFUSED/i, "refused, not answered from nowhere");
    for (let i = 0; i < 400 && delays.length < 14; i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(delays.length >= 14, `reconnection attempts seen: ${delays.length}`);
    assert.ok(delays.every((d) => d > 0 && d <= RECONNECT_MAX_DELAY_MS), `delays ${delays.join(",")}`);
    assert.equal(Math.max(...delays), RECONNECT_MAX_DELAY_MS, `delays ${delays.join(",")}`);

    await redis.restart();
    let value: string | null | undefined;
    for (let i = 0; i < 100 && value === undefined; i++) {
      value = await client.get("k").catch(() => undefined);
      if (value === undefined) await new Promise((r) => setTimeout(r, 50));
    }
    // no AOF: the restarted server is empty, and the same client answers from it
    assert.equal(value, null, "the client is back without being recreated");
    assert.equal(await client.set("k", "after"), "OK");
  });
});
