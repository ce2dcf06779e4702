/**
 * The dashboard's components rendered from fixed props by ink-testing-library (100 columns), the
 * keys of the interactive shell, and the pure data functions (rates from two snapshots, the plain
 * and JSON lines, --interval).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { stripVTControlCharacters } from "node:util";
import { render } from "ink-testing-library";
import { DashboardApp, type Quit } from "../../cli/dashboard/app.js";
import { AuditTail, Bar, barCells, Dashboard, DevicesPanel, Header, Nodes, Partitions, Queues, Rates, StatusLine } from "../../cli/dashboard/components.js";
import { dashboardLine, intervalMs, plainLine, rates, type ConnectionState, type DashboardSnapshot } from "../../cli/dashboard/model.js";
import { UsageError } from "../../cli/exit-codes.js";

const WIDTH = 100;

type Partition = DashboardSnapshot["projection"]["partitions"][number];

function partition(p: number, checkpoint: number | null, low: number, high: number, verdict = "OK"): Partition {
  return {
    partition: p, verdict, checkpoint, low, high, lag: checkpoint === null ? null : Math.max(0, high - checkpoint),
    newestMs: null, lost: null, detail: "", checkpointUpdatedAtMs: null,
  };
}

function snapshot(over: { timeMs?: number; startedAtMs?: number; epoch?: number; join?: number; remove?: number; retries?: number; written?: number; rebuilt?: number; partitions?: Partition[]; devices?: DashboardSnapshot["devices"] } = {}): DashboardSnapshot {
  const timeMs = over.timeMs ?? Date.UTC(2026, 10, 29, 23, 0, 1);
  return {
    time: new Date(timeMs).toISOString(),
    timeMs,
    startedAtMs: over.startedAtMs ?? 1000,
    counters: {
      membershipEvents: { join: over.join ?? 0, leave: 0, remove: over.remove ?? 0 },
      membershipRetries: { send: over.retries ?? 0, membership: 0 },
      // a total since the process started, unlike the backlog (pending[].depth, 3 + 0 below)
      conversationStateQueuedTotal: 17,
      conversationStateWritten: over.written ?? 12,
      conversationStateFailures: 0,
      usersRebuilt: over.rebuilt ?? 4,
      messagesCommitted: 30,
      relayDispatched: 30,
    },
    projection: {
      epoch: over.epoch ?? 3,
      authority: "redis-hash (development fallback)",
      retentionMs: 86_400_000,
      failure: null,
      partitions: over.partitions ?? [partition(0, 100, 0, 100), partition(1, 50, 0, 100), partition(2, 25, 0, 100), partition(3, null, 0, 40, "NO_CHECKPOINT")],
      pending: [{ instance: 0, depth: 3, deadLetters: 0 }, { instance: 1, depth: 0, deadLetters: 0 }],
    },
    audit: [
      { time: "2026-11-29T22:59:58.120Z", principal: "oscar", rpc: "/qim.admin.v1.GroupService/AddMembers", result: "OK" },
      { time: "2026-11-29T23:00:00.500Z", principal: "nobody", rpc: "/qim.admin.v1.ProjectionService/BumpEpoch", result: "PERMISSION_DENIED" },
    ],
    nodes: [
      { nodeId: "node-1", address: "localhost:7601", version: "0.1.0", startedAtMs: 1000, heartbeatAgeMs: 260, alive: true, draining: false, units: ["relay", "partition", "slot"], owned: { relayBuckets: 192, partitions: 6, slots: 192, rooms: 0 }, cmdBadFile: null, connections: 1200 },
      { nodeId: "node-2", address: "localhost:7602", version: "0.1.0", startedAtMs: 1000, heartbeatAgeMs: 1200, alive: true, draining: true, units: ["relay", "partition", "slot"], owned: { relayBuckets: 64, partitions: 2, slots: 64, rooms: 0 }, cmdBadFile: null, connections: 0 },
      { nodeId: "node-3", address: "localhost:7603", version: "0.1.0", startedAtMs: 1000, heartbeatAgeMs: 95_000, alive: false, draining: false, units: ["relay", "partition", "slot"], owned: { relayBuckets: 0, partitions: 0, slots: 0, rooms: 0 }, cmdBadFile: null, connections: null },
    ],
    cmdBadFiles: [],
    devices: over.devices ?? {
      connections: 3, onlineUsers: 2, framesIn: 100, framesOut: 400, pushes: 300, backPressureSoft: 1, backPressureHard: 0, upgradesRefused: 2, deliveryLag: 0,
      commitToPush: [{ leMs: 1, count: 0 }, { leMs: 5, count: 200 }, { leMs: 25, count: 298 }, { leMs: 100, count: 300 }, { leMs: null, count: 300 }],
    },
  };
}

const connected: ConnectionState = { kind: "connected" };
const down: ConnectionState = { kind: "disconnected", error: "cannot reach the server at localhost:7443: connect ECONNREFUSED", attempt: 3, retryInMs: 2000 };

/** The last frame without colours, as lines. */
function frame(r: { lastFrame(): string | undefined }): string[] {
  return stripVTControlCharacters(r.lastFrame() ?? "").split("\n");
}

const count = (s: string, ch: string) => [...s].filter((c) => c === ch).length;

/** Lets React and ink process an input or a re-render, then returns the frame (bounded). */
async function until(r: { lastFrame(): string | undefined }, ok: (text: string) => boolean): Promise<string> {
  let text = "";
  for (let i = 0; i < 50; i++) {
    await new Promise((res) => setImmediate(res));
    text = frame(r).join("\n");
    if (ok(text)) return text;
  }
  return text;
}

describe("dashboard: rates from two snapshots (pure)", () => {
  it("divides counter deltas by the server time between the snapshots, membership events summed over ops", () => {
    const a = snapshot({ timeMs: 10_000, join: 2, remove: 1, retries: 1, written: 10, rebuilt: 4 });
    const b = snapshot({ timeMs: 12_000, join: 5, remove: 2, retries: 2, written: 30, rebuilt: 5 });
    const r = rates(a, b)!;
    assert.equal(r.overMs, 2000);
    assert.equal(r.membershipEventsPerSec, 2); // (7 - 3) / 2 s
    assert.equal(r.membershipRetriesPerSec, 0.5);
    assert.equal(r.conversationStateWrittenPerSec, 10);
    assert.equal(r.usersRebuiltPerSec, 0.5);
    assert.equal(r.messagesCommittedPerSec, 0);
  });

  it("has no rate for the first snapshot, across a server restart, or when time did not move", () => {
    const a = snapshot({ timeMs: 10_000, join: 5 });
    assert.equal(rates(null, a), null);
    assert.equal(rates(a, snapshot({ timeMs: 11_000, join: 1, startedAtMs: 2000 })), null);
    assert.equal(rates(a, snapshot({ timeMs: 10_000, join: 6 })), null);
  });
});

describe("dashboard: lines when stdout is not a terminal", () => {
  it("plain: one line of key=value per snapshot; rates '-' until the second", () => {
    const a = snapshot({ timeMs: Date.UTC(2026, 10, 29, 23, 0, 0), join: 1 });
    const b = snapshot({ timeMs: Date.UTC(2026, 10, 29, 23, 0, 1), join: 2 });
    assert.equal(plainLine(a, null), "2026-11-29T23:00:00Z epoch=3 events/s=- retries/s=- lag=125 queue_backlog=3 queued_total=17 rebuilt=4 authority_written=12 failures=0 partitions_not_ok=1");
    assert.equal(plainLine(b, rates(a, b)), "2026-11-29T23:00:01Z epoch=3 events/s=1.0 retries/s=0.0 lag=125 queue_backlog=3 queued_total=17 rebuilt=4 authority_written=12 failures=0 partitions_not_ok=1");
    const dead: DashboardSnapshot = { ...a, projection: { ...a.projection, pending: [{ instance: 0, depth: 3, deadLetters: 2 }, { instance: 1, depth: 0, deadLetters: 1 }] } };
    assert.match(plainLine(dead, null), / partitions_not_ok=1 dead_letters=3$/);
  });

  it("JSON: the snapshot's fields with the rates", () => {
    const a = snapshot({ timeMs: 1000 });
    const line = JSON.parse(JSON.stringify(dashboardLine(a, null)));
    assert.deepEqual(Object.keys(line), ["time", "timeMs", "startedAtMs", "rates", "counters", "projection", "audit", "nodes", "cmdBadFiles", "devices"]);
    assert.equal(line.rates, null);
    assert.equal(line.projection.partitions[1].lag, 50);
  });

  it("--interval: seconds or a unit, 200ms to 60s", () => {
    assert.equal(intervalMs("--interval", "1s"), 1000);
    assert.equal(intervalMs("--interval", "2"), 2000);
    assert.equal(intervalMs("--interval", "0.2s"), 200);
    assert.equal(intervalMs("--interval", "500ms"), 500);
    assert.equal(intervalMs("--interval", "1m"), 60_000);
    for (const bad of ["100ms", "61s", "2m", "", "fast", "-1s", "1h"]) assert.throws(() => intervalMs("--interval", bad), UsageError, bad);
  });
});

describe("dashboard components at 100 columns", () => {
  it("Bar: filled cells proportional to value/max; max 0 is full; out of range clamps", () => {
    assert.equal(barCells(25, 100, 20), 5);
    assert.equal(barCells(0, 0, 20), 20);
    assert.equal(barCells(-5, 100, 20), 0);
    assert.equal(barCells(150, 100, 20), 20);
    const text = frame(render(<Bar value={3} max={4} width={20} />)).join("");
    assert.equal(count(text, "█"), 15);
    assert.equal(count(text, "░"), 5);
  });

  it("Partitions: checkpoint, low, high and lag per partition; the bar is the share of [low, high] read", () => {
    const lines = frame(render(<Partitions partitions={snapshot().projection.partitions} width={WIDTH} />));
    assert.match(lines[0]!, /^PART\s+VERDICT\s+CHECKPOINT\s+LOW\s+HIGH\s+LAG/);
    const rows = lines.slice(1);
    assert.equal(rows.length, 4);
    const cells = rows.map((r) => ({ full: count(r, "█"), empty: count(r, "░"), fields: r.replace(/[█░]/g, "").trim().split(/\s+/) }));
    const width = cells[0]!.full + cells[0]!.empty;
    assert.ok(width >= 8, `bar width ${width}`);
    for (const c of cells) assert.equal(c.full + c.empty, width, "every bar has the same width");
    assert.deepEqual(cells.map((c) => c.full), [width, Math.round(width / 2), Math.round(width / 4), 0]);
    assert.deepEqual(cells[1]!.fields, ["1", "OK", "50", "0", "100", "50"]);
    assert.deepEqual(cells[3]!.fields, ["3", "NO_CHECKPOINT", "-", "0", "40", "-"]);
    for (const l of lines) assert.ok(l.length <= WIDTH, `fits ${WIDTH} columns: ${l}`);
  });

  it("Nodes: state, heartbeat age, owned units and device connections per node (- when it publishes none); the bar is the node's share of the 256 relay buckets", () => {
    const lines = frame(render(<Nodes nodes={snapshot().nodes} width={WIDTH} />));
    assert.match(lines[0]!, /^NODE\s+STATE\s+HEARTBEAT\s+RELAY\s+PARTS\s+SLOTS\s+DEVICES\s+RELAY SHARE/);
    const rows = lines.slice(1);
    assert.equal(rows.length, 3);
    const cells = rows.map((r) => ({ full: count(r, "█"), empty: count(r, "░"), fields: r.replace(/[█░]/g, "").trim().split(/\s+/) }));
    const width = cells[0]!.full + cells[0]!.empty;
    assert.ok(width >= 8, `bar width ${width}`);
    // 192 of 256 buckets = 3/4 of the bar, 64 = 1/4, none = empty
    assert.deepEqual(cells.map((c) => c.full), [Math.round(width * 3 / 4), Math.round(width / 4), 0]);
    assert.deepEqual(cells[0]!.fields, ["node-1", "alive", "0.3s", "192", "6", "192", "1200"]);
    assert.deepEqual(cells[1]!.fields, ["node-2", "draining", "1.2s", "64", "2", "64", "0"]);
    assert.deepEqual(cells[2]!.fields, ["node-3", "DEAD", "1m", "35s", "0", "0", "0", "-"]);
    for (const l of lines) assert.ok(l.length <= WIDTH, `fits ${WIDTH} columns: ${l}`);
  });

  it("Devices: connections, frames and pushes per second, commit-to-push p99 between the two snapshots, slow devices, refused tokens", () => {
    const a = snapshot({ timeMs: 0 });
    const devices = a.devices;
    // one second later: 200 more pushes, whose latencies grew the buckets by 0, 100, 192, 200, 200
    const b = snapshot({
      timeMs: 1000,
      devices: {
        ...devices, framesIn: 150, framesOut: 640, pushes: 500, backPressureHard: 1, deliveryLag: 7,
        commitToPush: [{ leMs: 1, count: 0 }, { leMs: 5, count: 300 }, { leMs: 25, count: 490 }, { leMs: 100, count: 500 }, { leMs: null, count: 500 }],
      },
    });
    const r = rates(a, b)!;
    assert.deepEqual([r.framesInPerSec, r.framesOutPerSec, r.pushesPerSec], [50, 240, 200]);
    // 99% of 200 is 198: the 25 ms bucket grew by 192, the 100 ms one by 200
    assert.equal(r.commitToPushP99Ms, 100);
    const text = frame(render(<DevicesPanel devices={b.devices} rates={r} />)).join("\n");
    assert.match(text, /devices 3 connections \(2 users\)\s+frames in\/s 50\.0\s+out\/s 240\.0\s+pushes\/s 200\.0/);
    assert.match(text, /commit→push p99 ≤100 ms\s+delivery lag 7\s+slow devices: resync 1\s+closed 1\s+tokens refused 2/);
    // nothing pushed between two snapshots: no p99
    assert.equal(rates(b, snapshot({ timeMs: 2000, devices: b.devices }))!.commitToPushP99Ms, null);
  });

  it("Rates: per-second membership events and retries, totals of rebuilt users and authority writes", () => {
    const a = snapshot({ timeMs: 0, join: 0 });
    const b = snapshot({ timeMs: 4000, join: 6, retries: 2, rebuilt: 7, written: 40 });
    const text = frame(render(<Rates rates={rates(a, b)} counters={b.counters} />)).join("\n");
    assert.match(text, /membership events\/s 1\.5\s+retries\/s 0\.5/);
    assert.match(text, /users rebuilt 7\s+authority written 40\s+failures 0\s+queued total 17/);
    const first = frame(render(<Rates rates={null} counters={a.counters} />)).join("\n");
    assert.match(first, /membership events\/s -\s+retries\/s -/);
  });

  it("Queues and AuditTail: depth per instance; the newest entries with principal, RPC and result", () => {
    assert.match(frame(render(<Queues pending={[{ instance: 0, depth: 3, deadLetters: 0 }, { instance: 1, depth: 0, deadLetters: 0 }]} />)).join(""), /registration queue \(backlog now\)\s+instance 0: 3\s+instance 1: 0/);
    // dead letters show only where there are some
    const dead = frame(render(<Queues pending={[{ instance: 0, depth: 0, deadLetters: 0 }, { instance: 1, depth: 2, deadLetters: 5 }]} />)).join("");
    assert.match(dead, /instance 0: 0\s+instance 1: 2 \(5 dead letters\)/);
    assert.doesNotMatch(dead, /instance 0: 0 \(/);
    const lines = frame(render(<AuditTail entries={snapshot().audit} width={WIDTH} />));
    assert.match(lines[1]!, /^22:59:58Z\s+oscar\s+GroupService\/AddMembers\s+OK$/);
    assert.match(lines[2]!, /^23:00:00Z\s+nobody\s+ProjectionService\/BumpEpoch\s+PERMISSION_DENIED$/);
    assert.match(frame(render(<AuditTail entries={[]} width={WIDTH} />)).join("\n"), /no entries/);
  });

  it("StatusLine and Header: PAUSED; disconnected, retrying with the last error; connection state", () => {
    const paused = frame(render(<StatusLine state={connected} paused={true} />)).join("\n");
    assert.match(paused, /PAUSED/);
    assert.doesNotMatch(frame(render(<StatusLine state={connected} paused={false} />)).join("\n"), /PAUSED/);
    // the error wraps rather than being cut: its end (ECONNREFUSED, a TLS alert) is the useful part
    const lost = frame(render(<StatusLine state={down} paused={false} />)).join(" ").replace(/\s+/g, " ");
    assert.match(lost, /disconnected, retrying in 2\.0s \(attempt 3\): cannot reach the server at localhost:7443: connect ECONNREFUSED/);
    const header = frame(render(<Header endpoint="localhost:7443" state={down} intervalMs={1000} time="2026-11-29T23:00:01Z" />)).join("\n");
    assert.match(header, /qimctl dashboard\s+localhost:7443\s+● disconnected, retrying\s+every 1s\s+2026-11-29T23:00:01Z/);
    assert.match(frame(render(<Header endpoint="localhost:7443" state={connected} intervalMs={500} time={null} />)).join(""), /● connected\s+every 0\.5s/);
  });

  it("Dashboard: all sections within the width; waiting before the first snapshot", () => {
    const a = snapshot({ timeMs: 10_000, join: 1 });
    const b = snapshot({ timeMs: 11_000, join: 3 });
    const lines = frame(render(<Dashboard endpoint="localhost:7443" intervalMs={1000} snapshot={b} rates={rates(a, b)} state={connected} paused={false} width={WIDTH} />));
    const text = lines.join("\n");
    for (const l of lines) assert.ok(l.length <= WIDTH, `fits ${WIDTH} columns: ${l}`);
    assert.match(text, /epoch 3\s+authority redis-hash/);
    assert.match(text, /membership events\/s 2\.0/);
    assert.match(text, /registration queue \(backlog now\)\s+instance 0: 3/);
    assert.match(text, /GroupService\/AddMembers/);
    assert.equal(lines.filter((l) => /^\d+\s+(OK|NO_CHECKPOINT)\s/.test(l)).length, 4);
    const waiting = frame(render(<Dashboard endpoint="localhost:7443" intervalMs={1000} snapshot={null} rates={null} state={{ kind: "connecting" }} paused={false} width={WIDTH} />)).join("\n");
    assert.match(waiting, /● connecting/);
    assert.match(waiting, /waiting for the first snapshot/);
  });
});

describe("dashboard: a CMD pending file set aside as .bad", () => {
  const bad = { nodeId: "node-2", path: "/var/lib/qim/node-2/conversationv2/cmd_conversation_updates.json.bad", setAsideAt: "2026-11-29T22:40:00.000Z" };

  it("is a warning above the overview naming the node, the path, the time and what to do; the plain line names it", () => {
    const s = { ...snapshot(), cmdBadFiles: [bad] };
    const lines = frame(render(<Dashboard endpoint="e:1" intervalMs={1000} snapshot={s} rates={null} state={connected} paused={false} width={WIDTH} />));
    const text = lines.join(" ").replace(/\s+/g, " ");
    assert.ok(text.includes(`warning: node node-2: its CMD pending file did not decode at start-up and was set aside as ${bad.path} at ${bad.setAsideAt}; inspect it, then delete it`), text);
    const warnAt = lines.findIndex((l) => l.includes("warning: node node-2"));
    const overviewAt = lines.findIndex((l) => /epoch 3\s+authority/.test(l));
    assert.ok(warnAt > 0 && warnAt < overviewAt, "the warning comes first");
    for (const l of lines) assert.ok(l.length <= WIDTH, `fits ${WIDTH} columns: ${l}`);
    assert.match(plainLine(s, null), / cmd_bad_file="node-2:\/var\/lib\/qim\/node-2\/conversationv2\/cmd_conversation_updates\.json\.bad"$/);
    const none = frame(render(<Dashboard endpoint="e:1" intervalMs={1000} snapshot={snapshot()} rates={null} state={connected} paused={false} width={WIDTH} />)).join("\n");
    assert.ok(!none.includes("warning:"), "no warning without a .bad file");
  });

  it("still fits a short terminal (the warning's rows are counted)", () => {
    const s = { ...snapshot(), cmdBadFiles: [bad, { ...bad, nodeId: "node-3" }], audit: Array.from({ length: 8 }, (_, i) => ({ time: `2026-11-29T23:00:0${i}.000Z`, principal: `p${i}`, rpc: "/qim.admin.v1.GroupService/AddMembers", result: "OK" })) };
    const short = frame(render(<Dashboard endpoint="e:1" intervalMs={1000} snapshot={s} rates={null} state={connected} paused={false} width={WIDTH} height={34} />));
    assert.ok(short.length < 34, `${short.length} rows for a 34-row terminal`);
    assert.equal(short.filter((l) => l.startsWith("warning: node node-")).length, 2);
  });
});

describe("dashboard: a terminal shorter than the whole view", () => {
  it("keeps the frame shorter than the terminal by showing only the newest audit entries that fit", () => {
    // a server that is no node (no nodes panel) and has no gateway (no devices panel); with them, their rows are counted the same way (below)
    const noDevices = { connections: 0, onlineUsers: 0, framesIn: 0, framesOut: 0, pushes: 0, backPressureSoft: 0, backPressureHard: 0, upgradesRefused: 0, deliveryLag: 0, commitToPush: [] };
    const many = { ...snapshot({ devices: noDevices }), nodes: [], audit: Array.from({ length: 8 }, (_, i) => ({ time: `2026-11-29T23:00:0${i}.000Z`, principal: `p${i}`, rpc: "/qim.admin.v1.GroupService/AddMembers", result: "OK" })) };
    for (const state of [connected, down]) {
      const all = frame(render(<Dashboard endpoint="e:1" intervalMs={1000} snapshot={many} rates={null} state={state} paused={false} width={WIDTH} />));
      assert.ok(all.some((l) => /^23:00:00Z\s+p0\s/.test(l)), "no height: every entry");
      const short = frame(render(<Dashboard endpoint="e:1" intervalMs={1000} snapshot={many} rates={null} state={state} paused={false} width={WIDTH} height={24} />));
      assert.ok(short.length < 24, `${short.length} rows for a 24-row terminal (${state.kind})`);
      assert.ok(short.some((l) => /^23:00:07Z\s+p7\s/.test(l)), "the newest entry stays");
      assert.ok(!short.some((l) => /^23:00:00Z\s+p0\s/.test(l)), "the oldest entry goes");
      const withNodes = frame(render(<Dashboard endpoint="e:1" intervalMs={1000} snapshot={{ ...many, nodes: snapshot().nodes, devices: snapshot().devices }} rates={null} state={state} paused={false} width={WIDTH} height={33} />));
      assert.ok(withNodes.some((l) => /^devices 3 connections/.test(l)), "the devices panel is shown");
      assert.ok(withNodes.length < 33, `${withNodes.length} rows with the nodes and devices panels for a 33-row terminal (${state.kind})`);
      assert.ok(withNodes.some((l) => /^node-3\s+DEAD/.test(l)), "the nodes panel is shown");
      assert.ok(withNodes.some((l) => /^23:00:07Z\s+p7\s/.test(l)), "the newest entry stays with the nodes panel");
    }
  });
});

describe("dashboard: keys of the interactive shell", () => {
  it("p freezes the shown snapshot (PAUSED) while new ones arrive, p again shows the newest; q and Ctrl+C quit", async () => {
    const quits: Quit[] = [];
    const props = { endpoint: "localhost:7443", intervalMs: 1000, state: connected, onQuit: (how: Quit) => quits.push(how) };
    const [s2, s3, s4] = [snapshot({ timeMs: 10_000, epoch: 2 }), snapshot({ timeMs: 11_000, epoch: 3, join: 2 }), snapshot({ timeMs: 12_000, epoch: 4, join: 7 })];
    const r = render(<DashboardApp {...props} snapshot={s3} rates={rates(s2, s3)} />);
    assert.match(await until(r, (t) => /epoch 3/.test(t)), /epoch 3/);
    r.stdin.write("p");
    assert.match(await until(r, (t) => /PAUSED/.test(t)), /PAUSED/);
    r.rerender(<DashboardApp {...props} snapshot={s4} rates={rates(s3, s4)} />);
    const paused = await until(r, () => false);
    assert.match(paused, /epoch 3/, "paused: the last snapshot stays");
    assert.match(paused, /membership events\/s 2\.0/, "paused: its rates stay with it");
    assert.match(paused, /PAUSED/);
    r.stdin.write("p");
    const resumed = await until(r, (t) => /epoch 4/.test(t) && !/PAUSED/.test(t));
    assert.match(resumed, /epoch 4/);
    assert.match(resumed, /membership events\/s 5\.0/);
    assert.doesNotMatch(resumed, /PAUSED/);
    r.stdin.write("q");
    r.stdin.write("\u0003");
    await until(r, () => quits.length === 2);
    assert.deepEqual(quits, ["quit", "interrupt"]);
    r.unmount();
  });
});
