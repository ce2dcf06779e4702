/**
 * The metrics the alert rules stand on, scraped from a real `qim-admin-server` process over HTTP
 * while real things happen to it: a start-up with every partition OK, audit writes refused by the
 * OS (the server runs under a file size limit, as a full disk would refuse them), a checkpoint
 * moved past the log's end under the running consumer, and its Redis stopped. The calls are the
 * real `qimctl` process over mTLS.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import { writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { run } from "../e2e/qimctl.js";
import { startRedis, type RedisServer } from "../harness/redis.js";
import { startServerProcess, type ServerProcess } from "../reliability/server-process.js";
import { scrape, type Scrape } from "./exposition.js";

const PARTITIONS = 8; // the server's default dispatch.partitions
const VERDICTS = ["OK", "NO_CHECKPOINT", "OVER_WINDOW", "BEYOND_HIGH", "IDENTITY_MISMATCH"];

/** Scrapes until `ok` holds (at most `tries` scrapes, 200 ms apart); returns the last scrape. */
async function scrapeUntil(url: string, ok: (s: Scrape) => boolean, tries = 100): Promise<Scrape> {
  let s = await scrape(url);
  for (let i = 1; i < tries && !ok(s); i++) {
    await new Promise((r) => setTimeout(r, 200));
    s = await scrape(url);
  }
  return s;
}

describe("a real server's /metrics", { timeout: 180_000 }, () => {
  let dir: string;
  let pki: TestPkiFiles;
  let redis: RedisServer;
  let server: ServerProcess;
  let context: string;
  let url: string;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-server-metrics-"));
    pki = await writeTestPki(path.join(dir, "pki"));
    redis = await startRedis();
    // 2 KiB of audit log: a few calls fit, then the OS refuses the writes (EFBIG)
    server = await startServerProcess({ redisAddr: redis.addr, pki, auditLog: path.join(dir, "audit.log"), metricsListen: "127.0.0.1:0", fileSizeLimitKiB: 2 });
    url = server.metricsUrl!;
    context = path.join(dir, "context.json");
    writeFileSync(context, JSON.stringify({ endpoint: server.endpoint, ca: pki.ca.certPath, cert: pki.operator.certPath, key: pki.operator.keyPath, tenant: randomUUID() }));
  });

  after(async () => {
    await server?.stop();
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("after start-up: every partition OK with no lag, empty queues, Redis reachable, no audit failure", async () => {
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const s = await scrapeUntil(url, (x) => x.samples.has(`qim_store_reachable{addr="${redis.addr}",redis_instance="0"}`));
    for (let p = 0; p < PARTITIONS; p++) {
      for (const v of VERDICTS) assert.equal(s.samples.get(`qim_session_projection_partition_verdict{partition="${p}",verdict="${v}"}`), v === "OK" ? 1 : 0, `partition ${p} ${v}`);
      assert.equal(s.samples.get(`qim_session_projection_checkpoint_lag{partition="${p}"}`), 0);
    }
    assert.equal(s.samples.get(`qim_session_conversation_state_queue_depth{redis_instance="0"}`), 0);
    assert.equal(s.samples.get(`qim_session_conversation_state_dead_letter_queue_depth{redis_instance="0"}`), 0);
    assert.equal(s.samples.get(`qim_store_reachable{addr="${redis.addr}",redis_instance="0"}`), 1);
    assert.equal(s.samples.get("qim_admin_audit_write_failures_total"), 0);
    assert.equal(s.samples.get("qim_session_projection_epoch"), 0);
  });

  it("the process's own metrics agree with what /proc says of the server process", async () => {
    const s = await scrape(url);
    const status = readFileSync(`/proc/${server.pid}/status`, "utf8");
    const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
    const maxFds = Number(/Max open files\s+(\d+)/.exec(readFileSync(`/proc/${server.pid}/limits`, "utf8"))![1]);
    const fds = readdirSync(`/proc/${server.pid}/fd`).length;
    const scraped = s.samples.get("process_resident_memory_bytes")!;
    // read a moment apart: the same order of size, not the same bytes
    assert.ok(scraped > rss / 2 && scraped < rss * 2, `process_resident_memory_bytes ${scraped} against VmRSS ${rss}`);
    assert.equal(s.samples.get("process_max_fds"), maxFds);
    const open = s.samples.get("process_open_fds")!;
    assert.ok(open > 0 && Math.abs(open - fds) <= 10, `process_open_fds ${open} against ${fds} in /proc/PID/fd`);
    const heap = s.samples.get("nodejs_heap_size_used_bytes")!;
    assert.ok(heap > 0 && heap < scraped, `nodejs_heap_size_used_bytes ${heap} within the resident ${scraped}`);
  });

  it("every audit record the OS refused counts in qim_admin_audit_write_failures_total: two per refused call", async () => {
    let written = 0;
    let refused = 0;
    for (let i = 0; i < 60 && refused < 3; i++) {
      const r = await run(["group", "create", "--owner", randomUUID(), "--member", randomUUID()], { context });
      if (r.code === 0) {
        assert.equal(refused, 0, "once the file is full, no record fits");
        written++;
      } else {
        assert.equal(r.code, 1, r.stderr);
        assert.match(r.json?.message ?? "", /audit log unavailable/, r.stderr);
        refused++;
      }
    }
    assert.ok(written > 0, "some calls fit under the limit");
    assert.equal(refused, 3);
    // a refused call tried two records: its OK, then (that write having failed) its INTERNAL
    const s = await scrape(url);
    assert.equal(s.samples.get("qim_admin_audit_write_failures_total"), 2 * refused);
    assert.equal(server.log().split("\n").filter((l) => /audit log write failed/.test(l)).length, refused, "one log line per refused call");
  });

  it("a checkpoint moved past the log's end under the running consumer: partition 0 BEYOND_HIGH, its lag series gone", async () => {
    const client = new Redis({ host: redis.host, port: redis.port });
    try {
      const key = "qim:{d000}:ckpt:dispatch:0";
      const pos = await client.hget(key, "pos");
      assert.ok(pos, `${key} exists after start-up`);
      await client.hset(key, "pos", `1000000${pos.slice(pos.indexOf("|"))}`);
    } finally {
      client.disconnect();
    }
    const s = await scrapeUntil(url, (x) => x.samples.get(`qim_session_projection_partition_verdict{partition="0",verdict="BEYOND_HIGH"}`) === 1);
    for (const v of VERDICTS) assert.equal(s.samples.get(`qim_session_projection_partition_verdict{partition="0",verdict="${v}"}`), v === "BEYOND_HIGH" ? 1 : 0, v);
    assert.equal(s.samples.has(`qim_session_projection_checkpoint_lag{partition="0"}`), false);
    for (let p = 1; p < PARTITIONS; p++) assert.equal(s.samples.get(`qim_session_projection_partition_verdict{partition="${p}",verdict="OK"}`), 1);
    await server.waitForLog(/session projection stopped on partition 0/);
  });

  it("Redis stopped: qim_store_reachable goes to 0, and /metrics still answers", async () => {
    await redis.stop();
    const s = await scrapeUntil(url, (x) => x.samples.get(`qim_store_reachable{addr="${redis.addr}",redis_instance="0"}`) === 0);
    assert.equal(s.samples.get(`qim_store_reachable{addr="${redis.addr}",redis_instance="0"}`), 0);
  });
});
