/**
 * The load generator (bench/loadgen) and its checker. The checker is fed hand-made histories — a clean
 * one that passes, and that one with exactly one fault each (a delivery past a leave, an orphan, an
 * order inversion, a missing push) which must be reported, and only it. Then a short run against a
 * real node (20 devices, 2 groups, 20 msg/s for 5 s, one churn) must pass, cross-checked by a plain
 * count of what each never-churned device got against the acks of its groups.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import { check, judge, nextRate, quantile, runLoad, startTarget, type Arrival, type History, type LoadReport, type Target } from "../../bench/loadgen/index.js";

const G = "g-1";
const [A, B, C] = ["user-a", "user-b", "user-c"];
const normal = (seq: number, at = 100 + seq): Arrival => ({ group: G, seq, messageId: `m${seq}`, kind: "normal", createdAtMs: at - 5, arrivedAtMs: at });
const control = (seq: number): Arrival => ({ group: G, seq, messageId: `c${seq}`, kind: "control", createdAtMs: 100, arrivedAtMs: 105 });

/**
 * A, B, C are members from the start; messages at seqs 1, 2, 4, 6 (acked); B leaves at 3 and is
 * re-added at 5. Due: A and C get 1, 2, 4, 6; B gets 1, 2, 6 — 11 pushes. Control events 3 and 5
 * reach A and C (and 5, naming B, may reach B).
 */
function clean(): History {
  const acks = [1, 2, 4, 6].map((seq) => ({ group: G, seq, messageId: `m${seq}`, sender: A, sentAtMs: 90 + seq, ackAtMs: 92 + seq }));
  return {
    groups: [{ group: G, initialMembers: [A, B, C] }],
    membership: [{ group: G, user: B, op: "leave", seq: 3 }, { group: G, user: B, op: "join", seq: 5 }],
    acks,
    devices: [
      { device: "a", user: A, arrivals: [normal(1), normal(2), control(3), normal(4), control(5), normal(6)] },
      // a repeat of seq 2 before the leave is allowed (at least once), dedupable by id
      { device: "b", user: B, arrivals: [normal(1), normal(2), normal(2), control(5), normal(6)] },
      { device: "c", user: C, arrivals: [normal(1), normal(2), control(3), normal(4), control(5), normal(6)] },
    ],
  };
}

const faults = (h: History) => {
  const v = check(h);
  return { ok: v.ok, missing: v.missing.count, afterLeave: v.afterLeave.count, inversions: v.inversions.count, orphans: v.orphans.count };
};
const none = { missing: 0, afterLeave: 0, inversions: 0, orphans: 0 };

describe("the load generator's checker on hand-made histories", () => {
  it("passes the clean history: 11 due, 11 arrived, one repeat", () => {
    const v = check(clean());
    assert.equal(v.ok, true, JSON.stringify(v));
    assert.deepEqual([v.expected, v.arrived, v.duplicates], [11, 11, 1]);
  });

  it("reports a delivery past the leave, once however often it repeats (seq 4 twice while B is out)", () => {
    const h = clean();
    h.devices[1]!.arrivals.splice(3, 0, normal(4, 200), normal(4, 201));
    assert.deepEqual(faults(h), { ok: false, ...none, afterLeave: 1 });
    // the leave event itself, pushed to the leaver, is past the leave too
    const h2 = clean();
    h2.devices[1]!.arrivals.splice(3, 0, control(3));
    assert.deepEqual(faults(h2), { ok: false, ...none, afterLeave: 1 });
  });

  it("reports an orphan: a MESSAGE whose id no SEND_ACK returned", () => {
    const h = clean();
    h.devices[2]!.arrivals.push({ ...normal(7), messageId: "never-acked" });
    assert.deepEqual(faults(h), { ok: false, ...none, orphans: 1 });
  });

  it("reports an inversion: seq 2 after seq 4 on one connection", () => {
    const h = clean();
    const a = h.devices[0]!.arrivals;
    h.devices[0]!.arrivals = [a[0]!, a[3]!, a[1]!, a[2]!, a[4]!, a[5]!];
    const f = faults(h);
    // 4 then 2 then 3: two seqs at or below 4
    assert.deepEqual(f, { ok: false, ...none, inversions: 2 });
  });

  it("reports a missing push: C never gets seq 6", () => {
    const h = clean();
    h.devices[2]!.arrivals.pop();
    const v = check(h);
    assert.deepEqual(faults(h), { ok: false, ...none, missing: 1 });
    assert.deepEqual([v.expected, v.arrived], [11, 10]);
  });

  it("quantile is the nearest rank", () => {
    assert.equal(quantile([5, 1, 4, 2, 3], 0.5), 3);
    assert.equal(quantile(Array.from({ length: 100 }, (_, i) => i + 1), 0.99), 99);
  });
});

describe("spec 000's figure: the rate search (--search)", () => {
  const step = (rate: number, held: boolean) => ({ rate, held });
  it("doubles while a window holds, then bisects (geometric middle) until within 25 %", () => {
    assert.equal(nextRate([], 25), 25);
    assert.equal(nextRate([step(25, true)], 25), 50);
    assert.equal(nextRate([step(25, true), step(50, true)], 25), 100);
    // between 50 and 100: √5000 = 70.7 → 71
    assert.equal(nextRate([step(25, true), step(50, true), step(100, false)], 25), 71);
    // between 71 and 100: √7100 = 84.3 → 84
    assert.equal(nextRate([step(25, true), step(50, true), step(100, false), step(71, true)], 25), 84);
    // 84 / 71 = 1.18 ≤ 1.25: done
    assert.equal(nextRate([step(25, true), step(50, true), step(100, false), step(71, true), step(84, false)], 25), null);
  });

  it("halves when the first window does not hold, and stops below 1 msg/s", () => {
    assert.equal(nextRate([step(25, false)], 25), 12);
    assert.equal(nextRate([step(25, false), step(12, false)], 25), 6);
    assert.equal(nextRate([step(1, false)], 1), null);
  });

  it("a window holds only with the checker passing, nothing failed or skipped, and both p99s within the spec's 30 and 122 ms", () => {
    const r = (x: Partial<LoadReport> & { ok?: boolean }): LoadReport => ({
      failed: 0, skipped: 0, acked: 10, sendAckMs: { p50: 1, p99: 30 }, endToEndMs: { p50: 1, p99: 122 }, verdict: { ok: x.ok ?? true }, ...x,
    }) as unknown as LoadReport;
    const bounds = { sendAckP99Ms: 30, endToEndP99Ms: 122 };
    assert.deepEqual(judge(r({}), bounds), []);
    assert.deepEqual(judge(r({ sendAckMs: { p50: 1, p99: 31 } }), bounds), ["SEND_ACK p99 31 ms > 30"]);
    assert.deepEqual(judge(r({ endToEndMs: { p50: 1, p99: 123 } }), bounds), ["end to end p99 123 ms > 122"]);
    assert.equal(judge(r({ ok: false }), bounds)[0], "the checker failed");
    assert.equal(judge(r({ skipped: 3 }), bounds).length, 1);
    assert.equal(judge(r({ acked: 0 }), bounds)[0], "nothing acked");
  });
});

describe("the load generator against a real node", { timeout: 180_000 }, () => {
  let target: Target;
  before(async () => {
    target = await startTarget();
  });
  after(async () => {
    await target?.stop();
  });

  it("20 devices, 2 groups of 10, 20 msg/s for 5 s, one churn: the checker passes", async () => {
    // churn 0.25/s for 5 s: one leave, due at 4 s
    const { report: r, history: h } = await runLoad(target, { devices: 20, groups: 2, members: 10, rate: 20, durationS: 5, churn: 0.25 });
    assert.equal(r.verdict.ok, true, JSON.stringify(r.verdict));
    assert.ok(r.acked > 50, `acked ${r.acked}`);
    assert.equal(r.failed, 0);
    assert.equal(r.acked, r.sent);
    assert.deepEqual([r.leaves, r.rejoins], [1, 1]);
    assert.ok(r.verdict.expected > 0 && r.verdict.arrived === r.verdict.expected);
    // a plain count: a device whose user never left gets every acked message of its groups
    const churned = new Set(h.membership.map((e) => e.user));
    let checked = 0;
    for (const d of h.devices) {
      if (churned.has(d.user)) continue;
      const mine = new Set(h.groups.filter((g) => g.initialMembers.includes(d.user)).map((g) => g.group));
      const due = h.acks.filter((a) => mine.has(a.group)).map((a) => a.messageId).sort();
      const got = [...new Set(d.arrivals.filter((m) => m.kind === "normal").map((m) => m.messageId))].sort();
      assert.deepEqual(got, due, d.device);
      checked++;
    }
    assert.ok(checked >= 19);
  });
});

describe("the load generator against two node processes (--worker-node)", { timeout: 180_000 }, () => {
  let target: Target;
  before(async () => {
    target = await startTarget({ worker: true });
  });
  after(async () => {
    await target?.stop();
  });

  it("the devices' node owns no relay bucket and no partition, the worker all of them; 20 devices at 20 msg/s for 3 s: every acked message reaches every member once", async () => {
    const nodes = (await target.admin.listNodes({})).nodes;
    const door = nodes.find((n) => n.nodeId === "bench-node")!;
    const worker = nodes.find((n) => n.nodeId === "bench-worker")!;
    assert.deepEqual([door.owned?.relayBuckets, door.owned?.partitions], [0, 0]);
    assert.deepEqual([...worker.units].sort(), ["partition", "relay"]);
    assert.equal(worker.owned?.slots, 0);
    const { report: r, history: h } = await runLoad(target, { devices: 20, groups: 2, members: 10, rate: 20, durationS: 3, churn: 0 });
    assert.equal(r.verdict.ok, true, JSON.stringify(r.verdict));
    assert.equal(r.failed, 0);
    assert.equal(r.acked, r.sent);
    // a plain count: every device gets every acked message of its groups (no churn), each commit's
    // push having gone from the worker's relay to the devices' node over the node RPC
    for (const d of h.devices) {
      const mine = new Set(h.groups.filter((g) => g.initialMembers.includes(d.user)).map((g) => g.group));
      const due = h.acks.filter((a) => mine.has(a.group)).map((a) => a.messageId).sort();
      assert.ok(due.length > 0, d.device);
      assert.deepEqual([...new Set(d.arrivals.filter((m) => m.kind === "normal").map((m) => m.messageId))].sort(), due, d.device);
    }
  });
});

describe("the open-file limit a run needs (relaunchForOpenFiles)", () => {
  const child = path.join(path.dirname(fileURLToPath(import.meta.url)), "open-files-child.js");
  // the child asks for 100 devices: 100 + 256 of head room = 356 open files. Node raises its soft
  // limit to the hard one when it starts, so the limits below are hard ones (`ulimit -n` sets both)
  const run = (limits: string) => {
    const r = spawnSync("/bin/sh", ["-c", `${limits} && exec "$0" "$@"`, process.execPath, child, "100"], { encoding: "utf8" });
    return { code: r.status, out: r.stdout.trim().split("\n"), err: r.stderr };
  };
  // whether this user may raise a hard limit it lowered (root may; the test expects what applies)
  const mayRaise = spawnSync("/bin/sh", ["-c", "ulimit -n 300 && ulimit -n 356"], { stdio: "ignore" }).status === 0;

  it("runs the command again under a limit that holds it when this user may raise it, says so, and passes the exit code on", () => {
    const r = run("ulimit -n 300");
    if (mayRaise) {
      assert.deepEqual(r.out, ["soft limit 356", "relaunched, exit 7"]);
      assert.match(r.err, /raising the open-file limit from 300 to 356 for 100 connections/);
    } else {
      assert.deepEqual(r.out, ["soft limit 300"]);
      assert.equal(r.err, "");
    }
    assert.equal(r.code, 7);
  });

  it("does nothing when the limit holds already", () => {
    const r = run("ulimit -n 400");
    assert.deepEqual(r.out, ["soft limit 400"]);
    assert.equal(r.code, 7);
    assert.equal(r.err, "");
  });
});
