/**
 * `qimctl dev restart --node N` and `qimctl cluster undrain` with real processes, on a stack of
 * two nodes (dev up --nodes 2): a bad N is refused with the valid range and nothing stopped; node
 * 2 is stopped and started again with the same ports, dev status shows its new pid answering; a
 * drained node takes its share again after cluster undrain without a restart (the shares are read
 * from cluster nodes, i.e. from the leases in Redis), undraining it again says nothing changed,
 * and both undrains are in the audit log. XDG_CONFIG_HOME points into the temp dir.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { alive, killMentioning, ok, processesMentioning, qimctl } from "./helpers.js";

/** How long the nodes may take to hand units over (a drain, an undrain, a restart) before the test fails. */
const SETTLE_MS = 60_000;
/** Relay buckets and user slots of the cluster (core/cluster: RELAY_BUCKET_COUNT, SLOT_COUNT), split between the nodes. */
const UNITS = 256;

interface ClusterNodeJson { nodeId: string; alive: boolean; draining: boolean; owned: { relayBuckets: number; slots: number } }

describe("qimctl dev restart --node N and cluster undrain", { timeout: 300_000 }, () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "qimctl-dev-restart-"));
  const env = { XDG_CONFIG_HOME: tmp };
  const dir = path.join(tmp, "dev");

  after(async () => {
    await qimctl(["dev", "down", "--data-dir", dir], { env });
    const left = killMentioning(tmp);
    rmSync(tmp, { recursive: true, force: true });
    assert.deepEqual(left, [], "a test left processes behind");
  });

  /** Polls cluster nodes until `done` holds for them. */
  async function settle(ctx: string, what: string, done: (nodes: ClusterNodeJson[]) => boolean): Promise<ClusterNodeJson[]> {
    const deadline = Date.now() + SETTLE_MS;
    for (;;) {
      const nodes: ClusterNodeJson[] = ok(await qimctl(["cluster", "nodes", "--context", ctx], { env }), "cluster nodes").nodes;
      if (done(nodes)) return nodes;
      assert.ok(Date.now() < deadline, `${what}: ${JSON.stringify(nodes)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  const byId = (nodes: ClusterNodeJson[], id: string) => nodes.find((n) => n.nodeId === id)!;
  const split = (nodes: ClusterNodeJson[]) => nodes.length === 2 && nodes.every((n) => n.alive && !n.draining && n.owned.relayBuckets > 0 && n.owned.slots > 0)
    && nodes.reduce((a, n) => a + n.owned.relayBuckets, 0) === UNITS && nodes.reduce((a, n) => a + n.owned.slots, 0) === UNITS;

  it("restarts node 2 on its ports (a bad N refused with the range); a drained node works again after undrain; undrain is idempotent and audited", async () => {
    const up = ok(await qimctl(["dev", "up", "--data-dir", dir, "--nodes", "2"], { env }), "dev up --nodes 2");
    const [one, two] = up.nodes as { nodeId: string; pid: number; port: number; metricsPort: number; syncUrl: string }[];
    await settle(up.context, "the two nodes split the units", split);

    for (const bad of ["3", "9"]) {
      const r = await qimctl(["dev", "restart", "--data-dir", dir, "--node", bad], { env });
      assert.equal(r.code, 2, r.stderr);
      assert.equal(r.json.code, "INVALID_NODE");
      assert.equal(r.json.message, `--node must be 1 to 2 (the stack runs dev-1 … dev-2), got ${bad}`);
    }
    const outOfFlagRange = await qimctl(["dev", "restart", "--data-dir", dir, "--node", "0"], { env });
    assert.equal(outOfFlagRange.code, 2, outOfFlagRange.stderr);
    assert.ok(alive(one!.pid) && alive(two!.pid), "a refused restart stops nothing");

    const restarted = ok(await qimctl(["dev", "restart", "--data-dir", dir, "--node", "2"], { env }), "dev restart --node 2");
    assert.equal(restarted.restarted.length, 1);
    const r2 = restarted.restarted[0];
    assert.deepEqual([r2.nodeId, r2.previousPid, r2.stopped, r2.port], ["dev-2", two!.pid, "SIGTERM", two!.port]);
    assert.notEqual(r2.pid, two!.pid);
    assert.ok(!alive(two!.pid), "the old process is gone");
    assert.ok(alive(one!.pid), "node 1 was not touched");
    const servers = processesMentioning(dir).filter((p) => p.cmdline.includes("qim-admin-server")).map((p) => p.pid).sort();
    assert.deepEqual(servers, [one!.pid, r2.pid].sort(), "two admin servers: node 1 and the new node 2");
    const status = ok(await qimctl(["dev", "status", "--data-dir", dir], { env }), "dev status after the restart");
    assert.equal(status.state, "up");
    const s2 = status.nodes.find((n: { nodeId: string }) => n.nodeId === "dev-2");
    assert.deepEqual([s2.pid, s2.port, s2.alive, s2.answering, s2.syncUrl], [r2.pid, two!.port, true, true, two!.syncUrl], "back on the same admin and CMD sync ports");
    await settle(up.context, "the restarted node takes its share again", split);

    // drain dev-2, then undrain it: it works again without a restart (same pid)
    ok(await qimctl(["cluster", "drain", "dev-2", "--yes", "--context", up.context], { env }), "cluster drain");
    await settle(up.context, "dev-2 hands everything to dev-1", (nodes) => byId(nodes, "dev-2")?.draining === true && byId(nodes, "dev-2").owned.relayBuckets === 0 && byId(nodes, "dev-2").owned.slots === 0
      && byId(nodes, "dev-1")?.owned.relayBuckets === UNITS);
    const undrained = ok(await qimctl(["cluster", "undrain", "dev-2", "--context", up.context], { env }), "cluster undrain");
    assert.deepEqual(undrained, { nodeId: "dev-2", changed: true });
    await settle(up.context, "dev-2 takes its share again after undrain", split);
    assert.ok(alive(r2.pid), "no restart was needed");

    const again = ok(await qimctl(["cluster", "undrain", "dev-2", "--context", up.context], { env }), "cluster undrain again");
    assert.deepEqual(again, { nodeId: "dev-2", changed: false });
    const text = await qimctl(["cluster", "undrain", "dev-2", "--context", up.context], { env, json: false });
    assert.equal(text.code, 0, text.stderr);
    assert.equal(text.stdout.trim(), "Node dev-2 is not draining; nothing changed");
    const unknown = await qimctl(["cluster", "undrain", "dev-9", "--context", up.context], { env });
    assert.equal(unknown.code, 3, unknown.stderr);
    const missing = await qimctl(["cluster", "undrain", "--context", up.context], { env });
    assert.equal(missing.code, 2, missing.stderr);

    // the context points at dev-1: its audit log holds each undrain with the caller and what it did
    const audit = readFileSync(path.join(dir, "audit.log"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as { rpc: string; principal: string; detail: string });
    const undrains = audit.filter((a) => a.rpc.endsWith("Undrain"));
    assert.deepEqual(undrains.map((a) => [a.principal.includes("dev-admin"), a.detail]).slice(0, 3), [
      [true, "node dev-2 undrained: it takes its share of units again"],
      [true, "node dev-2 is not draining; nothing changed"],
      [true, "node dev-2 is not draining; nothing changed"],
    ]);

    // without --node: every node, one after the other, Redis untouched
    const all = ok(await qimctl(["dev", "restart", "--data-dir", dir], { env }), "dev restart (every node)");
    assert.deepEqual(all.restarted.map((x: { nodeId: string; previousPid: number }) => [x.nodeId, x.previousPid]), [["dev-1", one!.pid], ["dev-2", r2.pid]]);
    const after = ok(await qimctl(["dev", "status", "--data-dir", dir], { env }), "dev status after restarting every node");
    assert.equal(after.state, "up");
    assert.equal(after.redis.pid, up.redis.pid, "Redis was not restarted");
    assert.deepEqual(after.nodes.map((n: { pid: number }) => n.pid), all.restarted.map((x: { pid: number }) => x.pid));
    assert.equal(after.server.pid, all.restarted[0].pid, "server is node 1");
  });
});
