/**
 * `qimctl dev up --nodes N` with real processes: N admin servers on the stack's one redis-server,
 * each a node of one cluster (dev-1 … dev-N) with its own ports; `dev status --output json` lists
 * each with its pid and node id; `cluster nodes` through the stack's context sees every node own a
 * share; `dev down` stops them all. XDG_CONFIG_HOME points into the temp dir.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { alive, killMentioning, ok, processesMentioning, qimctl } from "./helpers.js";

/** How long the nodes may take to split the units before the test fails. */
const SETTLE_MS = 60_000;

describe("qimctl dev up --nodes 2", { timeout: 300_000 }, () => {
  let tmp: string;
  let env: NodeJS.ProcessEnv;

  before(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), "qimctl-dev-nodes-"));
    env = { XDG_CONFIG_HOME: tmp };
  });

  after(async () => {
    await qimctl(["dev", "down", "--data-dir", path.join(tmp, "dev")], { env });
    const left = killMentioning(tmp);
    rmSync(tmp, { recursive: true, force: true });
    assert.deepEqual(left, [], "a test left processes behind");
  });

  it("starts two nodes on one Redis; status lists both with pid and node id; both own a share; down stops all; a different --nodes is refused while up", async () => {
    const dir = path.join(tmp, "dev");
    const up = ok(await qimctl(["dev", "up", "--data-dir", dir, "--nodes", "2"], { env }), "dev up --nodes 2");
    assert.deepEqual(up.nodes.map((n: { nodeId: string }) => n.nodeId), ["dev-1", "dev-2"]);
    const pids = up.nodes.map((n: { pid: number }) => n.pid);
    assert.equal(new Set(pids).size, 2);
    assert.equal(up.server.pid, pids[0]);
    assert.equal(new Set(up.nodes.flatMap((n: { port: number; metricsPort: number }) => [n.port, n.metricsPort])).size, 4, "own admin and metrics ports");
    for (const pid of pids) assert.ok(alive(pid));
    const servers = processesMentioning(dir).filter((p) => p.cmdline.includes("qim-admin-server")).map((p) => p.pid).sort();
    assert.deepEqual(servers, [...pids].sort(), "exactly the two admin servers of this data dir");
    assert.equal(processesMentioning(dir).filter((p) => p.cmdline.includes("redis-server")).length, 1, "one redis-server");

    const status = ok(await qimctl(["dev", "status", "--data-dir", dir], { env }), "dev status");
    assert.equal(status.state, "up");
    assert.deepEqual(status.nodes.map((n: { nodeId: string; pid: number; alive: boolean; answering: boolean }) => [n.nodeId, n.pid, n.alive, n.answering]), [["dev-1", pids[0], true, true], ["dev-2", pids[1], true, true]]);

    // the cluster as the admin API reports it: both nodes registered, every relay bucket and slot owned once
    const deadline = Date.now() + SETTLE_MS;
    let nodes: { nodeId: string; alive: boolean; owned: { relayBuckets: number; slots: number } }[] = [];
    for (;;) {
      nodes = ok(await qimctl(["cluster", "nodes", "--context", up.context], { env }), "cluster nodes").nodes;
      const relay = nodes.reduce((a, n) => a + n.owned.relayBuckets, 0);
      const slots = nodes.reduce((a, n) => a + n.owned.slots, 0);
      if (nodes.length === 2 && nodes.every((n) => n.alive && n.owned.relayBuckets > 0) && relay === 256 && slots === 256) break;
      assert.ok(Date.now() < deadline, `the two nodes split the units: ${JSON.stringify(nodes)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.deepEqual(nodes.map((n) => n.nodeId), ["dev-1", "dev-2"]);

    const again = await qimctl(["dev", "up", "--data-dir", dir, "--nodes", "3"], { env });
    assert.equal(again.code, 4, again.stderr);
    assert.match(again.stderr, /runs 2 node\(s\), not 3/);

    const down = ok(await qimctl(["dev", "down", "--data-dir", dir], { env }), "dev down");
    assert.deepEqual(down.stopped.filter((s: { process: string }) => s.process === "server").map((s: { pid: number }) => s.pid).sort(), [...pids].sort());
    for (const pid of pids) assert.ok(!alive(pid), `pid ${pid} stopped`);
    assert.equal((await qimctl(["dev", "status", "--data-dir", dir], { env })).code, 5);
  });
});
