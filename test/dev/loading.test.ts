/**
 * `dev up` on a data dir whose Redis takes seconds to load its AOF (issue 22): redis-server
 * answers LOADING meanwhile, and dev up waits for it — saying how far it got — instead of giving
 * up and stopping it mid-load. The data dir is made by a redis-server of the test's own (the
 * harness) with the same AOF layout dev up uses: DEBUG POPULATE, then an AOF rewrite without the
 * RDB preamble (a plain command log, which loads several times slower than RDB), then a stop.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { startRedis } from "../harness/redis.js";
import { killMentioning, ok, qimctl } from "./helpers.js";

/**
 * Keys in the AOF: a million SETs as text load in about 4 s on a development machine (2 M: 7.7 s
 * measured), long enough for several probes of dev up (every 250 ms) to see LOADING.
 */
const KEYS = 1_000_000;
/** How often the test asks whether the AOF rewrite has finished. */
const REWRITE_POLL_MS = 100;

describe("dev up and a Redis still loading its data", { timeout: 120_000 }, () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "qimctl-dev-loading-"));
  const env = { XDG_CONFIG_HOME: tmp };

  after(async () => {
    await qimctl(["dev", "down", "--data-dir", path.join(tmp, "dev")], { env });
    const left = killMentioning(tmp);
    rmSync(tmp, { recursive: true, force: true });
    assert.deepEqual(left, [], "a test left processes behind");
  });

  it("waits while Redis answers LOADING, printing how far it got, then starts the server on the whole data set", async () => {
    const dir = path.join(tmp, "dev");
    const seed = await startRedis({ dir: path.join(dir, "redis"), appendonly: true, extraArgs: ["--aof-use-rdb-preamble", "no", "--enable-debug-command", "yes"] });
    try {
      assert.equal(await seed.command(["DEBUG", "POPULATE", String(KEYS)], 60_000), "+OK");
      await seed.command(["BGREWRITEAOF"]);
      for (;;) {
        const info = await seed.command(["INFO", "persistence"]);
        if (/aof_rewrite_in_progress:0/.test(info) && /aof_rewrite_scheduled:0/.test(info) && /aof_last_bgrewrite_status:ok/.test(info)) break;
        await new Promise((r) => setTimeout(r, REWRITE_POLL_MS));
      }
    } finally {
      await seed.stop();
    }

    const up = await qimctl(["dev", "up", "--data-dir", dir], { env, json: false });
    assert.equal(up.code, 0, `${up.stdout}\n${up.stderr}`);
    assert.match(up.stderr, /waiting for Redis to load its data \((\d+% loaded|progress unknown), \d+ s so far/);
    const state = ok(await qimctl(["dev", "status", "--data-dir", dir], { env }), "dev status");
    assert.equal(state.state, "up");
    // every key the seed wrote is there (DEBUG POPULATE names them key:0 …; the server adds keys of its own):
    // dev up let Redis finish instead of stopping it mid-load
    const seeded = execFileSync("redis-cli", ["-p", String(state.redis.port), "EVAL", "return #redis.call('KEYS', 'key:*')", "0"], { encoding: "utf8" }).trim();
    assert.equal(seeded, String(KEYS));
  });
});
