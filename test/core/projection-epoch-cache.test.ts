/**
 * The projection epoch as a list pull reads it (issue 26, "the hot key"): cached for
 * EPOCH_CACHE_MS, one GET shared by the pulls that ask meanwhile, a local bump seen at once, a
 * bump made elsewhere within the bound. A real redis-server; the GETs are counted by Redis itself
 * (INFO commandstats), the clock is the test's.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { EPOCH_CACHE_MS, KeySpace, ProjectionEpoch, RedisStore } from "../../core/index.js";
import { startRedis, type RedisServer } from "../harness/redis.js";

async function gets(server: RedisServer): Promise<number> {
  const m = /^cmdstat_get:calls=(\d+)/m.exec(await server.command(["INFO", "commandstats"]));
  return m ? Number(m[1]) : 0;
}

describe("ProjectionEpoch.current(): the epoch a list pull uses", () => {
  let server: RedisServer;
  let store: RedisStore;
  before(async () => {
    server = await startRedis();
    store = new RedisStore({ kind: "instances", addrs: [server.addr] });
  });
  after(async () => {
    await store?.close();
    await server?.stop();
  });

  it("is 1 s by name", () => {
    assert.equal(EPOCH_CACHE_MS, 1000);
  });

  it("serves 200 concurrent pulls with one GET, then none until the bound passes", async () => {
    let now = 1_000_000;
    const epoch = new ProjectionEpoch(store, new KeySpace(`e${randomUUID().slice(0, 8)}`), () => now);
    const before = await gets(server);
    const seen = await Promise.all(Array.from({ length: 200 }, () => epoch.current()));
    assert.deepEqual(new Set(seen), new Set([0]));
    assert.equal(await gets(server) - before, 1, "one GET for the 200");
    now += EPOCH_CACHE_MS - 1;
    await epoch.current();
    assert.equal(await gets(server) - before, 1, "still cached just inside the bound");
    now += 1;
    await epoch.current();
    assert.equal(await gets(server) - before, 2, "read again once the bound has passed");
  });

  it("a bump here is seen by the next pull at once; a bump on another node within the bound", async () => {
    let now = 5_000_000;
    const keys = new KeySpace(`e${randomUUID().slice(0, 8)}`);
    const here = new ProjectionEpoch(store, keys, () => now);
    const elsewhere = new ProjectionEpoch(store, keys, () => now);
    assert.equal(await here.current(), 0);
    assert.equal((await here.bump("test", "test")).epoch, 1);
    assert.equal(await here.current(), 1, "the local bump, without a read");
    assert.equal((await elsewhere.bump("test", "test")).epoch, 2);
    assert.equal(await here.current(), 1, "another node's bump is not seen inside the bound");
    assert.equal(await here.get(), 2, "get() reads Redis");
    assert.equal(await here.current(), 2, "and what it read is what current() serves");
    assert.equal((await elsewhere.bump("test", "test")).epoch, 3);
    now += EPOCH_CACHE_MS;
    assert.equal(await here.current(), 3, "seen once the bound has passed");
  });

  it("never goes back: a read that started before a local bump and ends after it keeps the bump", async () => {
    const keys = new KeySpace(`e${randomUUID().slice(0, 8)}`);
    let now = 9_000_000;
    const epoch = new ProjectionEpoch(store, keys, () => now);
    const reading = epoch.current();
    const bumped = await epoch.bump("test", "test");
    await reading;
    now += 1;
    assert.equal(await epoch.current(), bumped.epoch);
  });
});
