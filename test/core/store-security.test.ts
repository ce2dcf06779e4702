/**
 * The store against a production-like Redis (issue 15), on real servers: an ACL user with the
 * default user off, the legacy requirepass, TLS only with client certificates — a standalone
 * instance, three instances and a 3-master Cluster whose bus is on TLS too. A good store reaches
 * the engine's data; a store Redis refuses (wrong password, none, wrong CA, plaintext on the TLS
 * port) fails verify() with one line that says why and names the user and host:port, does not
 * storm the server with reconnections, and never prints a secret.
 */
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, it } from "node:test";
import { createCa } from "../../certs/pki.js";
import {
  ConversationService,
  newUuid,
  RECONNECT_MAX_DELAY_MS,
  RedisStore,
  UnavailableError,
  type RedisConnectionSecurity,
  type TopologyConfig,
} from "../../core/index.js";
import { redisTestSecurity, startRedis, startRedisCluster, type RedisClusterHandle, type RedisServer } from "../harness/redis.js";

/**
 * core/store's wait between attempts once Redis refused the credentials or the TLS handshake. The
 * store module does not export it; were it shorter than the window below, the bound would fail
 * and this copy would be found out.
 */
const REFUSED_RECONNECT_DELAY_MS = 30_000;
/** How long the connections are counted once verify() has rejected. */
const WINDOW_MS = 2_000;
/**
 * Connection attempts a refused store may make in the window: one already scheduled when the
 * refusal became known, plus one per REFUSED_RECONNECT_DELAY_MS (none in 2 s of 30). A store that
 * stormed would make one every RECONNECT_MAX_DELAY_MS at most: WINDOW_MS / 500 ms = 4 or more.
 */
const ATTEMPTS_IN_WINDOW = Math.ceil(WINDOW_MS / REFUSED_RECONNECT_DELAY_MS);
const STORM_ATTEMPTS = Math.floor(WINDOW_MS / RECONNECT_MAX_DELAY_MS);

const sec = redisTestSecurity();
/** A CA that signed nothing of these servers. */
const otherCa = createCa({ commonName: "not the Redis CA" });

/**
 * A TCP relay on 127.0.0.1 in front of one server that counts the connections it accepts: every
 * attempt a client makes, failed TLS handshakes included (Redis's total_connections_received
 * counts a TLS connection only once its handshake is done, so a wrong CA would count nothing).
 */
interface CountingProxy {
  addr: string;
  url: string;
  accepted(): number;
  close(): Promise<void>;
}

async function countingProxy(targetPort: number): Promise<CountingProxy> {
  let accepted = 0;
  const open = new Set<net.Socket>();
  const srv = net.createServer((client) => {
    accepted++;
    const upstream = net.connect({ host: "127.0.0.1", port: targetPort });
    open.add(client);
    open.add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    for (const s of [client, upstream]) {
      s.on("error", end);
      s.on("close", end);
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => srv.listen({ host: "127.0.0.1", port: 0 }, resolve));
  const port = (srv.address() as net.AddressInfo).port;
  return {
    addr: `127.0.0.1:${port}`,
    url: `rediss://127.0.0.1:${port}`,
    accepted: () => accepted,
    close: () => new Promise<void>((resolve) => {
      for (const s of open) s.destroy();
      srv.close(() => resolve());
    }),
  };
}

/** No message a store produced may carry a password or a private key. */
function assertNoSecret(texts: readonly string[], secrets: readonly string[]): void {
  for (const t of texts) {
    for (const s of secrets) assert.ok(!t.includes(s), `a message carries a secret: ${t}`);
    assert.doesNotMatch(t, /PRIVATE KEY/);
  }
}

interface Refusal {
  /** verify()'s rejection. */
  message: string;
  /** Every onError line and store.refused() after the rejection. */
  lines: string[];
  /** Connections the store opened in the WINDOW_MS after verify() rejected. */
  afterRefusal: number;
}

/**
 * Builds a store on `config`, expects verify() to reject with an UnavailableError, then counts the
 * store's connections through `proxies` for WINDOW_MS (no wait without proxies).
 */
async function refusedStore(config: TopologyConfig, proxies: CountingProxy[], verifyMs = 10_000): Promise<Refusal> {
  const lines: string[] = [];
  const store = new RedisStore(config, { onError: (e) => lines.push(e.message) });
  try {
    const err = await store.verify(verifyMs).then(() => assert.fail("verify() resolved against a Redis that refuses this store"), (e: unknown) => e);
    assert.ok(err instanceof UnavailableError, `an UnavailableError, got ${String(err)}`);
    const count = () => proxies.reduce((n, p) => n + p.accepted(), 0);
    const before = count();
    if (proxies.length > 0) await new Promise((r) => setTimeout(r, WINDOW_MS));
    const afterRefusal = count() - before;
    return { message: err.message, lines: [...lines, ...store.refused()], afterRefusal };
  } finally {
    // not close(): after a refused TLS handshake verify()'s PING is still in the offline queue,
    // and QUIT would wait behind it for the command timeout (10 s)
    for (const c of store.clients()) c.disconnect();
  }
}

/** One line, and nothing a password or key could be in. */
function assertOneLine(message: string): void {
  assert.doesNotMatch(message, /[\r\n]/, message);
}

/** The store works: verify() resolves, the engine creates `groups` groups and reads each back. */
async function assertEngineWorks(config: TopologyConfig, groups = 1): Promise<RedisStore> {
  const lines: string[] = [];
  const store = new RedisStore(config, { onError: (e) => lines.push(e.message) });
  await store.verify(10_000);
  const engine = new ConversationService(store, { keyPrefix: `s${newUuid().slice(0, 8)}` });
  const tenant = newUuid();
  for (let i = 0; i < groups; i++) {
    const created = await engine.createGroup({ tenant, owner: newUuid(), members: [newUuid(), newUuid()] });
    assert.deepEqual(await engine.getGroup(tenant, created.group), created);
  }
  assert.deepEqual(store.refused(), []);
  assert.deepEqual(lines, []);
  return store;
}

const SECRETS = [sec.acl.password, "wrong-password-0123"];

function withoutAuth(s: RedisConnectionSecurity): RedisConnectionSecurity {
  return s.tls ? { tls: s.tls } : {};
}

describe("store security: one instance with an ACL user, TLS only, client certificates", () => {
  let server: RedisServer;
  let proxy: CountingProxy;
  before(async () => {
    server = await startRedis(sec);
    proxy = await countingProxy(server.port);
  });
  after(async () => {
    await proxy?.close();
    await server?.stop();
  });

  it("a good store verifies; the engine creates a group and reads it back", async () => {
    const store = await assertEngineWorks({ kind: "instances", addrs: [server.url], ...server.security });
    await store.close();
  });

  it(`a wrong password: the credentials line naming the user and host:port; at most ${ATTEMPTS_IN_WINDOW} connection in ${WINDOW_MS} ms after it`, async () => {
    const r = await refusedStore({ kind: "instances", addrs: [proxy.url], ...server.security, auth: { ...sec.acl, password: SECRETS[1]! } }, [proxy]);
    assert.match(r.message, new RegExp(`^Redis refused the credentials for user ${sec.acl.username} at ${proxy.addr} \\(WRONGPASS `));
    assertOneLine(r.message);
    assert.ok(r.lines.includes(r.message), "onError and refused() say the same line");
    assert.ok(r.afterRefusal <= ATTEMPTS_IN_WINDOW, `${r.afterRefusal} connections after the refusal (a storm: ${STORM_ATTEMPTS} or more)`);
    assertNoSecret([r.message, ...r.lines], SECRETS);
  });

  it("a wrong CA: the TLS line naming host:port; no storm", async () => {
    const r = await refusedStore({ kind: "instances", addrs: [proxy.url], ...server.security, tls: { ...server.security.tls, caPem: otherCa.certPem } }, [proxy]);
    assert.match(r.message, new RegExp(`^Redis TLS handshake with ${proxy.addr} failed: the server certificate does not verify \\((SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE)`));
    assertOneLine(r.message);
    assert.ok(r.afterRefusal <= ATTEMPTS_IN_WINDOW, `${r.afterRefusal} connections after the refusal (a storm: ${STORM_ATTEMPTS} or more)`);
    assertNoSecret([r.message, ...r.lines], SECRETS);
  });

  it("no password: the NOAUTH line that says to configure one; no storm", async () => {
    const r = await refusedStore({ kind: "instances", addrs: [proxy.url], ...withoutAuth(server.security) }, [proxy]);
    assert.match(r.message, new RegExp(`^Redis at ${proxy.addr} requires authentication \\(NOAUTH\\) and no password is configured`));
    assertOneLine(r.message);
    assert.ok(r.afterRefusal <= ATTEMPTS_IN_WINDOW, `${r.afterRefusal} connections after the refusal (a storm: ${STORM_ATTEMPTS} or more)`);
    assertNoSecret([r.message, ...r.lines], SECRETS);
  });

  it("a plaintext address on the TLS port: the message suggests rediss://", async () => {
    const r = await refusedStore({ kind: "instances", addrs: [server.addr], auth: sec.acl }, []);
    assert.match(r.message, new RegExp(`^Redis at ${server.addr} .*use rediss://host:port`));
    assertOneLine(r.message);
    assertNoSecret([r.message, ...r.lines], SECRETS);
  });
});

describe("store security: one instance with the legacy requirepass", () => {
  const password = "legacy-password-0123";
  let server: RedisServer;
  let proxy: CountingProxy;
  before(async () => {
    server = await startRedis({ requirepass: password });
    proxy = await countingProxy(server.port);
  });
  after(async () => {
    await proxy?.close();
    await server?.stop();
  });

  it("a good store (a password, no user) verifies; the engine creates a group and reads it back", async () => {
    const store = await assertEngineWorks({ kind: "instances", addrs: [server.addr], ...server.security });
    await store.close();
  });

  it("a wrong password: the credentials line for user default; no storm", async () => {
    const r = await refusedStore({ kind: "instances", addrs: [proxy.addr], auth: { password: SECRETS[1]! } }, [proxy]);
    assert.match(r.message, new RegExp(`^Redis refused the credentials for user default at ${proxy.addr} \\(WRONGPASS `));
    assertOneLine(r.message);
    assert.ok(r.afterRefusal <= ATTEMPTS_IN_WINDOW, `${r.afterRefusal} connections after the refusal (a storm: ${STORM_ATTEMPTS} or more)`);
    assertNoSecret([r.message, ...r.lines], [...SECRETS, password]);
  });

  it("no password: the NOAUTH line; no storm", async () => {
    const r = await refusedStore({ kind: "instances", addrs: [proxy.addr] }, [proxy]);
    assert.match(r.message, new RegExp(`^Redis at ${proxy.addr} requires authentication \\(NOAUTH\\)`));
    assert.ok(r.afterRefusal <= ATTEMPTS_IN_WINDOW, `${r.afterRefusal} connections after the refusal (a storm: ${STORM_ATTEMPTS} or more)`);
    assertNoSecret([r.message, ...r.lines], [...SECRETS, password]);
  });
});

describe("store security: three instances with an ACL user and TLS", () => {
  let servers: RedisServer[] = [];
  before(async () => {
    servers = await Promise.all([0, 1, 2].map(() => startRedis(sec)));
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });

  it("groups created through one store land on every instance and read back through another", async () => {
    const config: TopologyConfig = { kind: "instances", addrs: servers.map((s) => s.url), ...servers[0]!.security };
    const writer = new RedisStore(config);
    const reader = new RedisStore(config);
    try {
      await writer.verify(10_000);
      const keyPrefix = `m${newUuid().slice(0, 8)}`;
      const engine = new ConversationService(writer, { keyPrefix });
      const other = new ConversationService(reader, { keyPrefix });
      const tenant = newUuid();
      const used = new Set<number>();
      // the bucket of a group decides its instance: create until each of the three holds one
      for (let i = 0; i < 60 && used.size < servers.length; i++) {
        const created = await engine.createGroup({ tenant, owner: newUuid() });
        used.add(writer.clients().indexOf(writer.clientFor(engine.conversationKeys(tenant, created.group).tag)));
        assert.deepEqual(await other.getGroup(tenant, created.group), created);
      }
      assert.equal(used.size, servers.length, `groups landed on instances ${[...used].join(", ")}`);
    } finally {
      await writer.close();
      await reader.close();
    }
  });
});

describe("store security: a 3-master Cluster with an ACL user and TLS, its bus on TLS", () => {
  let cluster: RedisClusterHandle;
  let proxies: CountingProxy[] = [];
  /** The seeds through the counting proxies: a refused store never gets past them. */
  let proxied: Extract<TopologyConfig, { kind: "cluster" }>;
  before(async () => {
    cluster = await startRedisCluster(3, sec);
    proxies = await Promise.all(cluster.nodes.map((n) => countingProxy(n.port)));
    proxied = { kind: "cluster", seeds: proxies.map((p) => p.url), ...cluster.security };
  });
  after(async () => {
    await Promise.all(proxies.map((p) => p.close()));
    await cluster?.stop();
  });
  const seedsText = () => proxies.map((p) => p.addr).join(",");
  /** A refresh of the slots tries every seed, and the store probes one seed to learn why they failed. */
  const perAttempt = () => proxies.length + 1;

  it("a good store verifies; the engine creates groups and reads them back", async () => {
    const store = await assertEngineWorks({ kind: "cluster", seeds: cluster.nodes.map((n) => n.url), ...cluster.security }, 6);
    await store.close();
  });

  it("a wrong password: the credentials line naming the user and the seeds; no storm", async () => {
    const r = await refusedStore({ ...proxied, auth: { ...sec.acl, password: SECRETS[1]! } }, proxies);
    assert.match(r.message, new RegExp(`^Redis refused the credentials for user ${sec.acl.username} at ${seedsText()} \\(WRONGPASS `));
    assertOneLine(r.message);
    const bound = ATTEMPTS_IN_WINDOW * perAttempt();
    assert.ok(r.afterRefusal <= bound, `${r.afterRefusal} connections after the refusal, bound ${bound} (a storm: ${STORM_ATTEMPTS * proxies.length} or more)`);
    assertNoSecret([r.message, ...r.lines], SECRETS);
  });

  it("a wrong CA: the TLS line; no storm", async () => {
    const r = await refusedStore({ ...proxied, tls: { ...cluster.security.tls, caPem: otherCa.certPem } }, proxies);
    assert.match(r.message, new RegExp(`^Redis TLS handshake with ${seedsText()} failed: the server certificate does not verify \\((SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE)`));
    assertOneLine(r.message);
    const bound = ATTEMPTS_IN_WINDOW * perAttempt();
    assert.ok(r.afterRefusal <= bound, `${r.afterRefusal} connections after the refusal, bound ${bound} (a storm: ${STORM_ATTEMPTS * proxies.length} or more)`);
    assertNoSecret([r.message, ...r.lines], SECRETS);
  });

  it("no password: the NOAUTH line; no storm", async () => {
    const r = await refusedStore({ kind: "cluster", seeds: proxied.seeds, ...withoutAuth(cluster.security) }, proxies);
    assert.match(r.message, new RegExp(`^Redis at ${seedsText()} requires authentication \\(NOAUTH\\) and no password is configured`));
    const bound = ATTEMPTS_IN_WINDOW * perAttempt();
    assert.ok(r.afterRefusal <= bound, `${r.afterRefusal} connections after the refusal, bound ${bound} (a storm: ${STORM_ATTEMPTS * proxies.length} or more)`);
    assertNoSecret([r.message, ...r.lines], SECRETS);
  });

  it("plaintext seeds on the TLS ports: the message suggests rediss://", async () => {
    // not a refusal (a reset could be an outage): verify() waits out its timeout, then says why
    const r = await refusedStore({ kind: "cluster", seeds: cluster.nodes.map((n) => n.addr), auth: sec.acl }, [], 3_000);
    assert.match(r.message, /ECONNRESET.*use rediss:\/\/host:port/);
    assertOneLine(r.message);
    assertNoSecret([r.message, ...r.lines], SECRETS);
  });
});
