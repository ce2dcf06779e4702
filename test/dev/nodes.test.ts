/**
 * `qimctl dev up --nodes N` with real processes: N admin servers on the stack's one redis-server,
 * each a node of one cluster (dev-1 … dev-N) with its own ports; `dev status --output json` lists
 * each with its pid and node id; `cluster nodes` through the stack's context sees every node own a
 * share; each node serves the CMD sync HTTP API on its own port (`nodes[].syncUrl`, text and
 * JSON), and a CMD message sent to a user is returned by curl's /message/sync on every node (each
 * routes the user to its owner); `dev down` stops them all. XDG_CONFIG_HOME points into the temp dir.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
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

    // every node serves the CMD sync HTTP API on its own port, named in dev up, dev status JSON and text
    const syncUrls = status.nodes.map((n: { syncUrl: string }) => n.syncUrl);
    for (const u of syncUrls) assert.match(u, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(new Set(syncUrls).size, 2, "one port per node");
    assert.deepEqual(up.nodes.map((n: { syncUrl: string }) => n.syncUrl), syncUrls);
    assert.equal(status.syncUrl, syncUrls[0], "syncUrl stays node 1's");
    const text = await qimctl(["dev", "status", "--data-dir", dir], { env, json: false });
    assert.equal(text.code, 0, text.stderr);
    for (const [i, u] of syncUrls.entries()) assert.match(text.stdout, new RegExp(`^  dev-${i + 1} .*  ${u.replace(/[.:/]/g, "\\$&")}$`, "m"));
    // a CMD message to one user is what /message/sync returns for that user on each node (routed to the user's owner)
    const user = randomUUID();
    ok(await qimctl(["cmd", "send", "--context", up.context, "--channel", `dev-nodes-${user.slice(0, 8)}`, "--to", user, "--text", "ping"], { env }), "cmd send");
    for (const u of syncUrls) {
      const out = execFileSync("curl", [
        "-sS", "--max-time", "20", "--cacert", up.pki.ca, "--cert", up.service.cert, "--key", up.service.key,
        "-d", JSON.stringify({ uid: user, limit: 10 }), "-w", "\n%{http_code}", `${u}/message/sync`,
      ], { encoding: "utf8" });
      const nl = out.lastIndexOf("\n");
      assert.equal(out.slice(nl + 1), "200", `${u}: ${out}`);
      const list = JSON.parse(out.slice(0, nl)) as { channel_id: string; payload: string }[];
      assert.deepEqual(list.map((m) => [m.channel_id, Buffer.from(m.payload, "base64").toString()]), [[`dev-nodes-${user.slice(0, 8)}`, "ping"]], `${u} returns the one message`);
    }

    const again = await qimctl(["dev", "up", "--data-dir", dir, "--nodes", "3"], { env });
    assert.equal(again.code, 4, again.stderr);
    assert.match(again.stderr, /runs 2 node\(s\), not 3/);

    const down = ok(await qimctl(["dev", "down", "--data-dir", dir], { env }), "dev down");
    assert.deepEqual(down.stopped.filter((s: { process: string }) => s.process === "server").map((s: { pid: number }) => s.pid).sort(), [...pids].sort());
    for (const pid of pids) assert.ok(!alive(pid), `pid ${pid} stopped`);
    assert.equal((await qimctl(["dev", "status", "--data-dir", dir], { env })).code, 5);
  });
});
