import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { stat } from "node:fs/promises";
import net from "node:net";
import { promisify } from "node:util";
import { Cluster, Redis } from "ioredis";
import { ALL_TOPOLOGIES, freePort, startRedis, startRedisCluster, startTopology } from "./redis.js";

const execFileP = promisify(execFile);

async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await execFileP("redis-cli", ["-h", "127.0.0.1", "-p", String(port), ...args], { timeout: 10_000 });
  return stdout.trim();
}

function rawPing(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: "127.0.0.1", port });
    let buf = "";
    sock.setTimeout(2_000, () => sock.destroy(new Error("timeout")));
    sock.on("error", reject);
    sock.on("connect", () => sock.write("PING\r\n"));
    sock.on("data", (d) => {
      buf += d.toString("utf8");
      if (buf.includes("\r\n")) {
        sock.end();
        resolve(buf.split("\r\n")[0]!);
      }
    });
  });
}

function assertDead(pid: number): void {
  assert.throws(() => process.kill(pid, 0), (e: NodeJS.ErrnoException) => e.code === "ESRCH");
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

test("freePort returns distinct bindable ports; clusterBus keeps port+10000 free", async () => {
  const a = await freePort();
  const b = await freePort();
  assert.notEqual(a, b);
  const c = await freePort({ clusterBus: true });
  assert.ok(c + 10_000 <= 65_535);
  for (const p of [c, c + 10_000]) {
    await new Promise<void>((resolve, reject) => {
      const srv = net.createServer();
      srv.once("error", reject);
      srv.listen({ host: "127.0.0.1", port: p }, () => srv.close(() => resolve()));
    });
  }
});

test("single server answers PING, stop() kills the pid and removes its temp dir", async () => {
  const s = await startRedis();
  try {
    assert.equal(s.host, "127.0.0.1");
    assert.equal(s.addr, `127.0.0.1:${s.port}`);
    assert.notEqual(s.port, 6379);
    assert.match(s.dir, /qim-redis-/);
    assert.equal(await rawPing(s.port), "+PONG");
    assert.equal(await cli(s.port, "ping"), "PONG");
    assert.equal(await cli(s.port, "config", "get", "appendonly"), "appendonly\nno");
    assert.equal(await cli(s.port, "config", "get", "save"), "save");
    assert.ok(await exists(`${s.dir}/redis.log`), "log file in the server dir");
  } finally {
    await s.stop();
  }
  assertDead(s.pid);
  assert.equal(await exists(s.dir), false, "temp dir removed");
  await s.stop(); // idempotent
});

test("kill9 + restart with appendonly/appendfsync always keeps a key written before the kill", async () => {
  const s = await startRedis({ appendonly: true, appendfsync: "always" });
  try {
    assert.equal(await cli(s.port, "config", "get", "appendfsync"), "appendfsync\nalways");
    assert.equal(await cli(s.port, "set", "k", "v"), "OK");
    const before = s.pid;
    await s.kill9();
    assertDead(before);
    await s.restart();
    assert.notEqual(s.pid, before);
    assert.equal(await cli(s.port, "get", "k"), "v");
  } finally {
    await s.stop();
  }
  assertDead(s.pid);
});

test("a cluster reports cluster_state:ok with all 16384 slots, and ioredis Cluster can use it", async (t) => {
  const t0 = Date.now();
  const c = await startRedisCluster();
  const elapsed = Date.now() - t0;
  const pids = c.nodes.map((n) => n.pid);
  try {
    t.diagnostic(`cluster start took ${elapsed} ms`);
    assert.equal(c.nodes.length, 3);
    assert.deepEqual(c.seeds, c.nodes.map((n) => n.addr));
    for (const n of c.nodes) {
      const info = await cli(n.port, "cluster", "info");
      assert.match(info, /^cluster_state:ok\r?$/m);
      assert.match(info, /^cluster_slots_assigned:16384\r?$/m);
      assert.match(info, /^cluster_known_nodes:3\r?$/m);
    }
    const client = new Cluster(
      c.seeds.map((s) => ({ host: "127.0.0.1", port: Number(s.split(":")[1]) })),
      { lazyConnect: true },
    );
    try {
      for (let i = 0; i < 20; i++) await client.set(`{b${i}}:k`, String(i));
      for (let i = 0; i < 20; i++) assert.equal(await client.get(`{b${i}}:k`), String(i));
    } finally {
      client.disconnect();
    }
  } finally {
    await c.stop();
  }
  for (const pid of pids) assertDead(pid);
});

test("startTopology builds the matching TopologyConfig for every topology", async (t) => {
  assert.ok(ALL_TOPOLOGIES.length > 0);
  for (const kind of ALL_TOPOLOGIES) {
    await t.test(kind, async () => {
      const topo = await startTopology(kind);
      const pids = topo.servers.map((s) => s.pid);
      try {
        assert.equal(topo.kind, kind);
        const addrs = topo.servers.map((s) => s.addr);
        if (kind === "cluster") {
          assert.deepEqual(topo.config, { kind: "cluster", seeds: addrs });
          assert.equal(addrs.length, 3);
        } else {
          assert.deepEqual(topo.config, { kind: "instances", addrs });
          assert.equal(addrs.length, kind === "single" ? 1 : 3);
          for (const s of topo.servers) {
            const r = new Redis({ host: s.host, port: s.port, lazyConnect: true });
            try {
              assert.equal(await r.ping(), "PONG");
            } finally {
              r.disconnect();
            }
          }
        }
        assert.equal(new Set(addrs).size, addrs.length, "distinct ports");
      } finally {
        await topo.stop();
      }
      for (const pid of pids) assertDead(pid);
    });
  }
});
