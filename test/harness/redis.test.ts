import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdir, readFile, stat } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import tls from "node:tls";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Cluster, Redis, type RedisOptions } from "ioredis";
import type { RedisConnectionSecurity } from "../../core/index.js";
import {
  ACCEPTANCE_TOPOLOGIES,
  ALL_TOPOLOGIES,
  freePort,
  redisTestSecurity,
  startRedis,
  startRedisCluster,
  startTopology,
  type RedisServer,
} from "./redis.js";

const execFileP = promisify(execFile);

/** redis-cli against a server the way the harness reaches it (TLS, --user, REDISCLI_AUTH). */
async function cli(s: RedisServer, ...args: string[]): Promise<string> {
  const { stdout } = await execFileP("redis-cli", [...s.cli.args, ...args], { timeout: 10_000, env: { ...process.env, ...s.cli.env } });
  return stdout.trim();
}

/** ioredis options from a server's `security` (what a TopologyConfig carries). */
function ioredisOptions(sec: RedisConnectionSecurity): RedisOptions {
  const o: RedisOptions = {};
  if (sec.auth) {
    o.password = sec.auth.password;
    if (sec.auth.username !== undefined) o.username = sec.auth.username;
  }
  if (sec.tls) o.tls = { ca: sec.tls.caPem, ...(sec.tls.certPem ? { cert: sec.tls.certPem, key: sec.tls.keyPem } : {}) };
  return o;
}

/** A TLS handshake with the server's CA and, when given, a client certificate: "ok" or the error's message. */
function tlsHandshake(port: number, opts: tls.ConnectionOptions): Promise<string> {
  return new Promise((resolve) => {
    const sock = tls.connect({ host: "127.0.0.1", port, ...opts });
    sock.setTimeout(3_000, () => sock.destroy(new Error("timeout")));
    sock.once("error", (e) => resolve(e.message));
    // TLS 1.3: the server checks the client certificate after the client's handshake is done, and
    // says so by closing; a PING answered is a handshake the server accepted
    sock.once("secureConnect", () => sock.write("PING\r\n"));
    sock.once("data", (d: Buffer) => {
      sock.destroy();
      const first = d.toString("utf8").split("\r\n")[0]!;
      resolve(first === "+PONG" ? "ok" : first);
    });
    sock.once("close", () => resolve("closed"));
  });
}

/** The file modes (octal text) of every file in `dir` whose name matches. */
async function modes(dir: string, re: RegExp): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const f of (await readdir(dir)).filter((n) => re.test(n)).sort()) out[f] = ((await stat(path.join(dir, f))).mode & 0o777).toString(8);
  return out;
}

function rawPing(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: "127.0.0.1", port });
    let buf = "";
    sock.setTimeout(2_000, () => sock.destroy(new Error("timeout")));
    sock.on("error", reject);
    sock.on("close", () => reject(new Error(`connection closed${buf ? ` after ${JSON.stringify(buf)}` : ""}`)));
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
    assert.equal(s.url, `redis://127.0.0.1:${s.port}`);
    assert.deepEqual(s.security, {});
    assert.equal(await s.command(["PING"]), "+PONG");
    assert.notEqual(s.port, 6379);
    assert.match(s.dir, /qim-redis-/);
    assert.equal(await rawPing(s.port), "+PONG");
    assert.equal(await cli(s, "ping"), "PONG");
    assert.equal(await cli(s, "config", "get", "appendonly"), "appendonly\nno");
    assert.equal(await cli(s, "config", "get", "save"), "save");
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
    assert.equal(await cli(s, "config", "get", "appendfsync"), "appendfsync\nalways");
    assert.equal(await cli(s, "set", "k", "v"), "OK");
    const before = s.pid;
    await s.kill9();
    assertDead(before);
    await s.restart();
    assert.notEqual(s.pid, before);
    assert.equal(await cli(s, "get", "k"), "v");
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
      const info = await cli(n, "cluster", "info");
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

test("a cluster with a replica per master: killMaster promotes the replica, which holds what was replicated, and rejoin makes the old master its replica", { timeout: 90_000 }, async (t) => {
  const c = await startRedisCluster(3, {}, { replicas: 1, nodeTimeoutMs: 1000 });
  try {
    assert.equal(c.nodes.length, 6);
    const before = await c.view();
    const masters = before.filter((v) => v.role === "master");
    assert.equal(masters.length, 3);
    assert.equal(before.filter((v) => v.role === "replica").length, 3);
    for (const m of masters) assert.equal(before.filter((v) => v.masterId === m.id).length, 1, `${m.addr} has one replica`);
    assert.deepEqual(new Set(masters.map((m) => m.addr)), new Set(c.seeds), "the seeds are the masters");

    const key = "{b007}:failover";
    const master = await c.masterOf(key);
    const replica = c.nodes.find((n) => before.find((v) => v.addr === n.addr)?.masterId === before.find((v) => v.addr === master.addr)!.id)!;
    // written and confirmed by one replica (WAIT) on the same connection, then the master dies
    const client = new Cluster(c.seeds.map((s) => ({ host: "127.0.0.1", port: Number(s.split(":")[1]) })), { lazyConnect: true });
    try {
      const res = await client.pipeline().set(key, "kept").wait(1, 2000).exec();
      assert.equal(res![1]![1], 1, "one replica confirmed the write");
    } finally {
      client.disconnect();
    }
    const { promoted, waitedMs } = await c.killMaster(master);
    t.diagnostic(`promotion took ${waitedMs} ms`);
    assert.equal(promoted, replica, "the dead master's own replica was promoted");
    assert.equal(await c.masterOf(key), promoted);
    assert.equal(await promoted.command(["GET", key]), "kept");
    assert.match(await promoted.command(["INFO", "replication"]), /^role:master\r?$/m);

    await c.rejoin(master);
    const after = await c.view();
    const old = after.find((v) => v.addr === master.addr)!;
    assert.equal(old.role, "replica", "the old master came back as a replica");
    assert.equal(old.masterId, after.find((v) => v.addr === promoted.addr)!.id);
    assert.match(await master.command(["INFO", "replication"]), /^master_link_status:up\r?$/m);
  } finally {
    await c.stop();
  }
});

test("an ACL server: the user gets in, the default user is off, the password is in a 0600 file and not in argv", async () => {
  const acl = { username: "qim-test", password: "pw-acl-0123" };
  const s = await startRedis({ acl });
  try {
    assert.deepEqual(s.security, { auth: acl });
    assert.equal(await s.command(["ACL", "WHOAMI"]), acl.username);
    assert.equal(await cli(s, "acl", "whoami"), acl.username);
    assert.match(await rawPing(s.port), /^-NOAUTH/, "no connection gets in without AUTH");
    assert.match(await s.command(["AUTH", "default", "anything"]), /^-WRONGPASS/, "the default user is off");
    assert.equal(await cli(s, "config", "get", "masteruser"), `masteruser\n${acl.username}`);
    assert.ok(!s.cli.args.includes(acl.password), "redis-cli gets the password from REDISCLI_AUTH");
    const cmdline = await readFile(`/proc/${s.pid}/cmdline`, "utf8");
    assert.ok(!cmdline.includes(acl.password), "not in redis-server's argv");
    assert.deepEqual(await modes(s.dir, /\.conf$/), { "auth.conf": "600" });
  } finally {
    await s.stop();
  }
});

test("a requirepass server: AUTH with the password alone, NOAUTH without", async () => {
  const s = await startRedis({ requirepass: "pw-legacy-0123" });
  try {
    assert.deepEqual(s.security, { auth: { password: "pw-legacy-0123" } });
    assert.equal(await s.command(["ACL", "WHOAMI"]), "default");
    assert.equal(await cli(s, "ping"), "PONG");
    assert.match(await rawPing(s.port), /^-NOAUTH/);
  } finally {
    await s.stop();
  }
});

test("a TLS server listens only on TLS, with its PEM files 0600 in its dir; tls-auth-clients yes refuses a client without a certificate", async () => {
  const sec = redisTestSecurity();
  const { clientCertPem, clientKeyPem, ...serverOnly } = sec.tls;
  const plainClients = await startRedis({ tls: { ...serverOnly, authClients: false } });
  const mtls = await startRedis({ tls: sec.tls });
  try {
    assert.equal(plainClients.url, `rediss://127.0.0.1:${plainClients.port}`);
    assert.equal(plainClients.addr, `127.0.0.1:${plainClients.port}`);
    assert.deepEqual(plainClients.security, { tls: { caPem: sec.tls.caPem } });
    assert.deepEqual(mtls.security, { tls: { caPem: sec.tls.caPem, certPem: clientCertPem, keyPem: clientKeyPem } });
    for (const s of [plainClients, mtls]) {
      assert.equal(await s.command(["PING"]), "+PONG");
      assert.equal(await cli(s, "config", "get", "port"), "port\n0", "no plaintext port");
      assert.equal(await cli(s, "config", "get", "tls-port"), `tls-port\n${s.port}`);
      await assert.rejects(rawPing(s.port), "plaintext PING on the TLS port gets no answer");
      assert.deepEqual(await modes(s.dir, /^tls-/), s === mtls
        ? { "tls-ca.crt": "600", "tls-client.crt": "600", "tls-client.key": "600", "tls-server.crt": "600", "tls-server.key": "600" }
        : { "tls-ca.crt": "600", "tls-server.crt": "600", "tls-server.key": "600" });
      const r = new Redis({ host: s.host, port: s.port, lazyConnect: true, ...ioredisOptions(s.security) });
      try {
        assert.equal(await r.ping(), "PONG");
      } finally {
        r.disconnect();
      }
    }
    assert.equal(await tlsHandshake(plainClients.port, { ca: sec.tls.caPem }), "ok");
    assert.notEqual(await tlsHandshake(mtls.port, { ca: sec.tls.caPem }), "ok", "no client certificate, no session");
    assert.equal(await tlsHandshake(mtls.port, { ca: sec.tls.caPem, cert: clientCertPem, key: clientKeyPem }), "ok");
  } finally {
    await plainClients.stop();
    await mtls.stop();
  }
});

test("restart() keeps the ACL user and TLS", async () => {
  const sec = redisTestSecurity();
  const s = await startRedis({ ...sec, appendonly: true, appendfsync: "always" });
  try {
    assert.equal(await cli(s, "set", "k", "v"), "OK");
    await s.kill9();
    await s.restart();
    assert.equal(await s.command(["ACL", "WHOAMI"]), sec.acl.username);
    assert.equal(await cli(s, "get", "k"), "v");
    await assert.rejects(rawPing(s.port));
  } finally {
    await s.stop();
  }
});

test("security options that cannot work are refused before a server starts", async () => {
  const { tls: t } = redisTestSecurity();
  await assert.rejects(startRedis({ acl: { username: "u", password: "p" }, requirepass: "p" }), /give one of them/);
  await assert.rejects(startRedis({ requirepass: "two words" }), /printable ASCII without spaces/);
  await assert.rejects(startRedis({ tls: { certPem: t.certPem, keyPem: t.keyPem, caPem: t.caPem, authClients: true } }), /authClients needs tls.clientCertPem/);
  await assert.rejects(startRedisCluster(3, { tls: { certPem: t.certPem, keyPem: t.keyPem, caPem: t.caPem } }), /cluster bus asks every peer for a certificate/);
});

test("ALL_TOPOLOGIES is single, multi, cluster, secure; the acceptance suites add cluster-secure; QIM_TEST_TOPOLOGIES names exactly the ones to run", async () => {
  if (process.env.QIM_TEST_TOPOLOGIES === undefined || process.env.QIM_TEST_TOPOLOGIES.trim() === "") {
    assert.deepEqual(ALL_TOPOLOGIES, ["single", "multi", "cluster", "secure"]);
    assert.deepEqual(ACCEPTANCE_TOPOLOGIES, ["single", "multi", "cluster", "secure", "cluster-secure"]);
  } else {
    assert.deepEqual(ACCEPTANCE_TOPOLOGIES, ALL_TOPOLOGIES);
  }
  const lists = async (env: string) => {
    const harness = path.join(path.dirname(fileURLToPath(import.meta.url)), "redis.js");
    const { stdout } = await execFileP(process.execPath, ["--input-type=module", "-e",
      `const h = await import(${JSON.stringify(harness)}); console.log(JSON.stringify([h.ALL_TOPOLOGIES, h.ACCEPTANCE_TOPOLOGIES]));`,
    ], { env: { ...process.env, QIM_TEST_TOPOLOGIES: env }, timeout: 10_000 });
    return JSON.parse(stdout) as [string[], string[]];
  };
  assert.deepEqual(await lists("cluster-secure,single"), [["single", "cluster-secure"], ["single", "cluster-secure"]]);
  assert.deepEqual(await lists("secure"), [["secure"], ["secure"]]);
  await assert.rejects(lists("secure,tls"), /unknown topology "tls"/);
});

test("startTopology builds the matching TopologyConfig for every topology", async (t) => {
  assert.ok(ACCEPTANCE_TOPOLOGIES.length > 0);
  for (const kind of ACCEPTANCE_TOPOLOGIES) {
    await t.test(kind, async () => {
      const topo = await startTopology(kind);
      const pids = topo.servers.map((s) => s.pid);
      try {
        assert.equal(topo.kind, kind);
        const addrs = topo.servers.map((s) => s.addr);
        const secure = kind === "secure" || kind === "cluster-secure";
        const sec = redisTestSecurity();
        const security = secure
          ? { auth: sec.acl, tls: { caPem: sec.tls.caPem, certPem: sec.tls.clientCertPem, keyPem: sec.tls.clientKeyPem } }
          : {};
        // the secure kinds name their servers as an operator would: rediss://
        const named = secure ? topo.servers.map((s) => s.url) : addrs;
        if (secure) for (const s of topo.servers) assert.equal(s.url, `rediss://${s.addr}`);
        if (kind === "cluster" || kind === "cluster-secure") {
          assert.deepEqual(topo.config, { kind: "cluster", seeds: named, ...security });
          assert.equal(addrs.length, 3);
          const client = new Cluster(topo.servers.map((s) => ({ host: s.host, port: s.port })), { lazyConnect: true, redisOptions: ioredisOptions(topo.servers[0]!.security) });
          try {
            for (let i = 0; i < 20; i++) await client.set(`{b${i}}:k`, String(i));
            for (let i = 0; i < 20; i++) assert.equal(await client.get(`{b${i}}:k`), String(i));
          } finally {
            client.disconnect();
          }
          if (secure) {
            for (const s of topo.servers) {
              assert.equal(await cli(s, "config", "get", "tls-cluster"), "tls-cluster\nyes");
              assert.equal(await cli(s, "config", "get", "tls-replication"), "tls-replication\nyes");
              assert.equal(await cli(s, "config", "get", "masteruser"), `masteruser\n${sec.acl.username}`);
            }
          }
        } else {
          assert.deepEqual(topo.config, { kind: "instances", addrs: named, ...security });
          assert.equal(addrs.length, kind === "multi" ? 3 : 1);
          for (const s of topo.servers) {
            const r = new Redis({ host: s.host, port: s.port, lazyConnect: true, ...ioredisOptions(s.security) });
            try {
              assert.equal(await r.ping(), "PONG");
            } finally {
              r.disconnect();
            }
          }
        }
        if (secure) {
          for (const s of topo.servers) {
            assert.equal(await s.command(["ACL", "WHOAMI"]), sec.acl.username);
            assert.equal(await cli(s, "config", "get", "tls-auth-clients"), "tls-auth-clients\nyes");
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
