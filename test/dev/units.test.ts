/**
 * `qimctl dev up --nodes 2 --cluster-units 1=relay` with real processes (issue 26): dev-1 an API
 * node, dev-2 a worker taking every kind; the cluster as the admin API reports it gives dev-1 relay
 * buckets only and dev-2 every partition and slot. The servers get the settings the stack means and
 * no others: a QIM_* variable left in the caller's shell does not reach them (read from
 * /proc/<pid>/environ), the units they were given are in their arguments. Bad --cluster-units are
 * refused with exit 2 before anything starts; a running stack with other units is not reused.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { killMentioning, ok, qimctl } from "./helpers.js";

/** How long the nodes may take to split the units before the test fails. */
const SETTLE_MS = 60_000;
const RELAY_BUCKETS = 256; // core/base COMMIT_BUCKETS: every relay bucket is owned once
const PARTITIONS = 8; // the server's default dispatch.partitions
const SLOTS = 256;

describe("qimctl dev up --cluster-units", { timeout: 300_000 }, () => {
  let tmp: string;
  let env: NodeJS.ProcessEnv;

  before(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), "qimctl-dev-units-"));
    // a setting of the caller's shell meant for another server: it must not reach the stack's
    env = { XDG_CONFIG_HOME: tmp, QIM_DISPATCH_PARTITIONS: "3" };
  });

  after(async () => {
    await qimctl(["dev", "down", "--data-dir", path.join(tmp, "dev")], { env });
    const left = killMentioning(tmp);
    rmSync(tmp, { recursive: true, force: true });
    assert.deepEqual(left, [], "a test left processes behind");
  });

  it("refuses units no node would run, nodes the stack has not, unknown kinds: exit 2, nothing started", async () => {
    const dir = path.join(tmp, "refused");
    for (const [args, why] of [
      [["--nodes", "1", "--cluster-units", "1=relay"], /no node takes partition, slot/],
      [["--nodes", "2", "--cluster-units", "3=relay"], /node 3 is not one of the stack's nodes 1 to 2/],
      [["--nodes", "2", "--cluster-units", "1=relay,bogus"], /unknown kind "bogus"/],
      [["--nodes", "2", "--cluster-units", "1=relay", "--cluster-units", "1=slot"], /node 1 is named twice/],
      [["--nodes", "2", "--cluster-units", "relay"], /expected N=KINDS/],
    ] as const) {
      const r = await qimctl(["dev", "up", "--data-dir", dir, ...args], { env });
      assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.json?.message ?? r.stderr, why);
    }
    assert.equal(existsSync(path.join(dir, "dev.json")), false, "no stack state written");
  });

  it("an API node and a worker: the cluster gives dev-1 relay buckets only, dev-2 every partition and slot", async () => {
    const dir = path.join(tmp, "dev");
    const up = ok(await qimctl(["dev", "up", "--data-dir", dir, "--nodes", "2", "--cluster-units", "1=relay"], { env }), "dev up");
    assert.deepEqual(up.nodes.map((n: { units: string[] }) => n.units), [["relay"], ["relay", "partition", "slot", "room"]]);
    assert.ok(up.notes.some((n: string) => /not passed to the servers.*QIM_DISPATCH_PARTITIONS/.test(n)), up.notes.join("\n"));

    // what each server process was given: its units in its arguments, no QIM_DISPATCH_PARTITIONS in its environment
    const [apiPid, workerPid] = up.nodes.map((n: { pid: number }) => n.pid);
    const argv = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    const unitsArg = (pid: number) => argv(pid)[argv(pid).indexOf("--cluster-units") + 1];
    assert.equal(unitsArg(apiPid), "relay");
    assert.equal(unitsArg(workerPid), "relay,partition,slot,room");
    for (const pid of [apiPid, workerPid]) assert.equal(readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").some((e) => e.startsWith("QIM_DISPATCH_PARTITIONS=")), false);

    const deadline = Date.now() + SETTLE_MS;
    let nodes: { nodeId: string; units: string[]; owned: { relayBuckets: number; partitions: number; slots: number } }[] = [];
    for (;;) {
      nodes = ok(await qimctl(["cluster", "nodes", "--context", up.context], { env }), "cluster nodes").nodes;
      const relay = nodes.reduce((a, n) => a + n.owned.relayBuckets, 0);
      const api = nodes.find((n) => n.nodeId === "dev-1");
      const worker = nodes.find((n) => n.nodeId === "dev-2");
      if (api && worker && api.owned.relayBuckets > 0 && relay === RELAY_BUCKETS && worker.owned.partitions === PARTITIONS && worker.owned.slots === SLOTS) break;
      assert.ok(Date.now() < deadline, `the nodes split the units: ${JSON.stringify(nodes)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    const api = nodes.find((n) => n.nodeId === "dev-1")!;
    assert.deepEqual(api.units, ["relay"]);
    assert.deepEqual([api.owned.partitions, api.owned.slots], [0, 0], "the API node takes no partition and no slot");

    // the text names the API node's units
    const text = await qimctl(["dev", "up", "--data-dir", dir, "--nodes", "2", "--cluster-units", "1=relay"], { env, json: false });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /node dev-1:.*units relay$/m);

    // the same stack with other units is not reused
    const other = await qimctl(["dev", "up", "--data-dir", dir, "--nodes", "2"], { env });
    assert.equal(other.code, 4, other.stderr);
    assert.match(other.json?.message ?? other.stderr, /dev-1 takes relay, not relay,partition,slot/);
  });
});
