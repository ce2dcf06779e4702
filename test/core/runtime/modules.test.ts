/**
 * The runtime's one list of engine modules (core/runtime/modules.ts): every core/ folder whose
 * code has a lifecycle (a class with start() and stop()) is driven through the list, so a new
 * module cannot be started or stopped by hand in the constructor; and the shutdown is the start
 * order reversed (release pass, then stop pass), on a real Redis, observed through the modules'
 * own log lines and the cluster's registry.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { EngineRuntime, KeySpace, newUuid, nodesKey, RedisHashAuthority, RedisStore } from "../../../core/index.js";
import { startRedis, type RedisServer } from "../../harness/redis.js";

let ROOT = dirname(fileURLToPath(import.meta.url));
while (!existsSync(join(ROOT, "package.json"))) ROOT = dirname(ROOT);

/** core/ folders (the runtime's own aside) with a class that has both start() and stop(), read from the sources. */
function foldersWithALifecycle(): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(ROOT, "core"), { withFileTypes: true })) {
    if (!e.isDirectory() || e.name === "runtime") continue;
    const dir = join(ROOT, "core", e.name);
    const has = readdirSync(dir).filter((f) => f.endsWith(".ts")).some((f) => {
      const text = readFileSync(join(dir, f), "utf8");
      return /^ {2}(?:async )?start\(/m.test(text) && /^ {2}(?:async )?stop\(/m.test(text);
    });
    if (has) out.push(e.name);
  }
  return out.sort();
}

describe("the runtime's module list", { timeout: 120_000 }, () => {
  let redis: RedisServer;
  let store: RedisStore;

  before(async () => {
    redis = await startRedis();
    store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
  });
  after(async () => {
    await store?.close();
    await redis?.stop();
  });

  function runtime(lines: string[], withCluster: boolean): EngineRuntime {
    const prefix = `rm${newUuid().slice(0, 8)}`;
    return new EngineRuntime({
      store, keyPrefix: prefix, dispatch: { clusterId: "test", topicId: "dispatch", partitionCount: 2 },
      authority: new RedisHashAuthority(store, new KeySpace(prefix)), projection: { background: false }, relayIntervalMs: 50,
      conversationList: { compactor: { background: false } },
      cmd: { catchUpIntervalMs: 0, flushIntervalMs: 0 },
      ...(withCluster ? { cluster: { nodeId: "n1", address: "", version: "test", leaseTtlMs: 60_000, heartbeatIntervalMs: 30_000 } } : {}),
      log: (line) => lines.push(line),
    });
  }

  test("every core folder with start() and stop() has a module in the list (a cluster node lists them all)", () => {
    const rt = runtime([], true);
    // by hand from the tree: the cluster, CMD sync, the conversation list (and its unread audit), delivery to devices, the relay (dispatch), the projection, retention, rooms, presence, the session view
    assert.deepEqual(foldersWithALifecycle(), ["cluster", "cmd-sync", "conversation-list", "delivery", "dispatch", "presence", "projection", "retention", "rooms", "session-view"]);
    assert.deepEqual([...new Set(rt.modules.map((m) => m.folder))].sort(), foldersWithALifecycle());
  });

  test("docs/architecture.md's module table names every core/ folder", () => {
    const doc = readFileSync(join(ROOT, "docs", "architecture.md"), "utf8");
    const table = doc.slice(doc.indexOf("## Modules"), doc.indexOf("### Start and stop order"));
    const rows = [...table.matchAll(/^\| `core\/([a-z-]+)\/` \|/gm)].map((m) => m[1]!).sort();
    const folders = readdirSync(join(ROOT, "core"), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort();
    assert.deepEqual(rows, folders);
  });

  test("start in list order; shutdown releases then stops in reverse: main's order (CMD flush, cluster handover, relay, view, audit, list, projection)", async () => {
    const lines: string[] = [];
    const rt = runtime(lines, true);
    assert.deepEqual((await rt.health()).map((h) => h.state), rt.modules.map(() => "idle"));
    await rt.start();
    assert.deepEqual((await rt.health()).map((h) => h.state), rt.modules.map(() => "running"));
    const started = lines.filter((l) => l.startsWith("runtime: started ")).map((l) => l.slice("runtime: started ".length));
    // the order of EngineRuntime.start() before the list (by hand from main's code)
    assert.deepEqual(started, ["cluster", "projection", "conversation-list", "unread-audit", "session-view", "cmd-sync", "delivery", "rooms", "presence", "retention", "relay"]);
    assert.deepEqual(started, rt.modules.map((m) => m.name));
    // the node is in the cluster's registry while it runs
    const nodes = nodesKey(rt.keys);
    assert.equal(await store.clientForKey(nodes).hexists(nodes, "n1"), 1);

    lines.length = 0;
    await rt.stop();
    const shutdown = lines.filter((l) => /^runtime: (released|stopped) /.test(l) || /^cluster: node n1 left/.test(l)).map((l) => l.replace(/^runtime: /, "").replace(/^cluster: node n1 left.*/, "cluster left"));
    // main's EngineRuntime.stop(), by hand: cmd.stop, cluster.stop (its own "left" line), relay, delivery, sessionView, unreadAudit, conversationList, projection
    assert.deepEqual(shutdown, [
      "released retention", "released cmd-sync", "cluster left", "released cluster",
      "stopped relay", "stopped presence", "stopped rooms", "stopped delivery", "stopped session-view", "stopped unread-audit", "stopped conversation-list", "stopped projection",
    ]);
    // the same as the start order reversed, pass by pass
    const reversed = [...started].reverse();
    assert.deepEqual(shutdown.filter((l) => l.startsWith("released ")).map((l) => l.slice(9)), reversed.filter((n) => n === "retention" || n === "cmd-sync" || n === "cluster"));
    assert.deepEqual(shutdown.filter((l) => l.startsWith("stopped ")).map((l) => l.slice(8)), reversed.filter((n) => n !== "retention" && n !== "cmd-sync" && n !== "cluster"));
    assert.deepEqual((await rt.health()).map((h) => h.state), rt.modules.map(() => "stopped"));
    // the node left the registry (read from Redis, not from the module)
    assert.equal(await store.clientForKey(nodes).hexists(nodes, "n1"), 0);
    // a second stop does nothing
    lines.length = 0;
    await rt.stop();
    assert.deepEqual(lines.filter((l) => l.startsWith("runtime: ")), []);
  });

  test("health names each module's metrics by its prefixes; a process without cluster options has no cluster module", async () => {
    const rt = runtime([], false);
    assert.deepEqual(rt.modules.map((m) => m.name), ["projection", "conversation-list", "unread-audit", "session-view", "cmd-sync", "delivery", "rooms", "presence", "retention", "relay"]);
    const health = new Map((await rt.health()).map((h) => [h.name, h]));
    // names from the modules' metrics.ts files, by hand
    assert.ok(health.get("cmd-sync")!.metrics.includes("qim_cmd_pending_entries"));
    assert.ok(health.get("relay")!.metrics.includes("qim_relay_dispatched_total"));
    assert.ok(health.get("unread-audit")!.metrics.includes("qim_conversation_list_unread_audit_rows_total"));
    assert.ok(!health.get("conversation-list")!.metrics.includes("qim_conversation_list_unread_audit_rows_total"));
    assert.ok(health.get("session-view")!.metrics.includes("qim_session_snapshot_rows"));
    assert.ok(health.get("projection")!.metrics.includes("qim_session_projection_epoch"));
    // CMD sync runs the CMD log (runtime.cmd.log): its commits counter is the module's
    assert.ok(health.get("cmd-sync")!.metrics.includes("qim_cmd_log_commits_total"));
    // the conversation service's writer has no lifecycle: its metrics belong to no module of the list
    for (const h of health.values()) assert.ok(!h.metrics.includes("qim_writer_messages_committed_total"), h.name);
  });
});
