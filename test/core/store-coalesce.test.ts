/**
 * RedisStore's write coalescing (core/store/store.ts): the commands written to a connection during
 * one iteration of the event loop leave in one socket write, from however many callbacks of that
 * iteration they come, in the order written; a command written in the check phase itself (by a
 * setImmediate callback, after the uncork of its iteration was queued) still leaves, on the next
 * iteration, without waiting for other I/O.
 */
import assert from "node:assert/strict";
import type { Socket } from "node:net";
import { after, before, describe, it } from "node:test";
import { RedisStore } from "../../core/index.js";
import { startRedis, type RedisServer } from "../harness/redis.js";

describe("RedisStore write coalescing", { timeout: 60_000 }, () => {
  let redis: RedisServer;
  let store: RedisStore;
  before(async () => {
    redis = await startRedis();
    store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
    await store.clients()[0]!.ping();
  });
  after(async () => {
    await store?.close();
    await redis?.stop();
  });

  /** Counts the socket writes (write or writev system calls) of the store's connection. */
  function countWrites(): { writes: () => number; restore: () => void } {
    const stream = (store.clients()[0] as unknown as { stream: Socket & { _write: Function; _writev: Function } }).stream;
    const write = stream._write;
    const writev = stream._writev;
    let n = 0;
    stream._write = function (this: Socket, ...a: unknown[]) { n++; return write.apply(this, a); };
    stream._writev = function (this: Socket, ...a: unknown[]) { n++; return writev.apply(this, a); };
    return { writes: () => n, restore: () => { stream._write = write; stream._writev = writev; } };
  }

  it("commands from three timer callbacks of one iteration leave in one write, in order", async () => {
    const client = store.clients()[0]!;
    const key = `coalesce:${process.pid}:timers`;
    await client.del(key);
    const spy = countWrites();
    try {
      // three timers due at once run in one timers phase of one iteration: three callbacks
      const replies = await new Promise<number[]>((resolve, reject) => {
        const out: Promise<number>[] = [];
        for (let i = 0; i < 3; i++) setTimeout(() => { out.push(client.rpush(key, String(i))); if (out.length === 3) Promise.all(out).then(resolve, reject); }, 0);
        // the three were created across a millisecond boundary now and then (due at t+1 and t+2),
        // and a loop iteration that began in between ran only the first: hold the thread until
        // all three are due, so the next timers phase finds them all expired
        const due = Date.now() + 5;
        while (Date.now() < due) { /* spin */ }
      });
      // RPUSH answers the list's length after the push: 1, 2, 3 when they ran in the order written
      assert.deepEqual(replies, [1, 2, 3]);
      assert.equal(spy.writes(), 1, "one socket write for the three callbacks' commands");
    } finally {
      spy.restore();
    }
    assert.deepEqual(await client.lrange(key, 0, -1), ["0", "1", "2"]);
  });

  it("a command written in the check phase leaves on the next iteration (no hang), after the commands before it", async () => {
    const client = store.clients()[0]!;
    const key = `coalesce:${process.pid}:immediate`;
    await client.del(key);
    const first = client.rpush(key, "a");
    // queued after the uncork this write scheduled: its own write goes out on the next iteration
    const second = await new Promise<Promise<number>>((resolve) => setImmediate(() => setImmediate(() => resolve(client.rpush(key, "b")))));
    assert.deepEqual(await Promise.all([first, second]), [1, 2]);
    // and a chain of commands, each written from the reply of the one before (a reply read, then
    // its continuation), runs to its end
    let n = 0;
    for (let i = 0; i < 50; i++) n = await client.rpush(key, String(i));
    assert.equal(n, 52);
  });
});
