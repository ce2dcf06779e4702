/**
 * The dashboard's trends: the bounded ring buffer, the rate and lag history built from snapshots
 * (TrendHistory), the sparkline text, and the components that show them (the trends section, the
 * lag column of the partition table, pausing), rendered by ink-testing-library at 100 columns.
 * Every expected sparkline is worked out by hand from the rule: level round(v / top × 7) of
 * ▁▂▃▄▅▆▇█ (0 is ▁, anything above 0 at least ▂), a space where there is no value, the newest at
 * the right.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { stripVTControlCharacters } from "node:util";
import { render } from "ink-testing-library";
import { DashboardApp, type Quit } from "../../cli/dashboard/app.js";
import { Dashboard, formatSpan, Partitions, seriesMax, sparkline, Trends } from "../../cli/dashboard/components.js";
import { rates, Ring, TREND_WINDOW_MS, TrendHistory, type ConnectionState, type DashboardSnapshot, type Trends as TrendValues } from "../../cli/dashboard/model.js";

const WIDTH = 100;

type Partition = DashboardSnapshot["projection"]["partitions"][number];

function partition(p: number, checkpoint: number | null, high: number): Partition {
  return {
    partition: p, verdict: checkpoint === null ? "NO_CHECKPOINT" : "OK", checkpoint, low: 0, high, lag: checkpoint === null ? null : high - checkpoint,
    newestMs: null, lost: null, detail: "", checkpointUpdatedAtMs: null,
  };
}

/** A snapshot at `t` seconds with the given counter totals and partitions. */
function snapshot(t: number, c: { events?: number; messages?: number; dispatched?: number; startedAtMs?: number } = {}, partitions: Partition[] = [partition(0, 10, 10)]): DashboardSnapshot {
  const timeMs = 1_000_000 + t * 1000;
  return {
    time: new Date(timeMs).toISOString(), timeMs, startedAtMs: c.startedAtMs ?? 1,
    counters: {
      membershipEvents: { join: c.events ?? 0, leave: 0, remove: 0 }, membershipRetries: { send: 0, membership: 0 },
      conversationStateQueuedTotal: 0, conversationStateWritten: 0, conversationStateFailures: 0, usersRebuilt: 0,
      messagesCommitted: c.messages ?? 0, relayDispatched: c.dispatched ?? 0,
    },
    projection: { epoch: 1, authority: "redis-hash", retentionMs: 86_400_000, failure: null, partitions, pending: [{ instance: 0, depth: 0, deadLetters: 0 }] },
    audit: [],
    nodes: [],
    cmdBadFiles: [],
    devices: { connections: 0, onlineUsers: 0, framesIn: 0, framesOut: 0, pushes: 0, backPressureSoft: 0, backPressureHard: 0, upgradesRefused: 0, deliveryLag: 0, commitToPush: [] },
  };
}

/** Feeds snapshots through a history as the command does (rates between consecutive ones). */
function feed(history: TrendHistory, snaps: DashboardSnapshot[]): TrendValues {
  let prev: DashboardSnapshot | null = null;
  let out: TrendValues | undefined;
  for (const s of snaps) {
    out = history.record(s, rates(prev, s));
    prev = s;
  }
  return out!;
}

function frame(r: { lastFrame(): string | undefined }): string[] {
  return stripVTControlCharacters(r.lastFrame() ?? "").split("\n");
}

async function until(r: { lastFrame(): string | undefined }, ok: (text: string) => boolean): Promise<string> {
  let text = "";
  for (let i = 0; i < 50; i++) {
    await new Promise((res) => setImmediate(res));
    text = frame(r).join("\n");
    if (ok(text)) return text;
  }
  return text;
}

describe("dashboard trends: the ring buffer", () => {
  it("keeps the newest `capacity` values, oldest first, and drops the older ones", () => {
    const ring = new Ring<number>(3);
    assert.deepEqual(ring.toArray(), []);
    ring.push(1);
    ring.push(2);
    assert.deepEqual(ring.toArray(), [1, 2]);
    for (const v of [3, 4, 5]) ring.push(v);
    assert.deepEqual(ring.toArray(), [3, 4, 5]);
    assert.equal(ring.length, 3);
    for (const v of [6, 7, 8, 9]) ring.push(v);
    assert.deepEqual(ring.toArray(), [7, 8, 9]);
    const copy = ring.toArray();
    copy.push(99);
    assert.deepEqual(ring.toArray(), [7, 8, 9], "toArray is a copy");
    assert.throws(() => new Ring(0), RangeError);
    assert.throws(() => new Ring(1.5), RangeError);
  });
});

describe("dashboard trends: the history of rates and lags", () => {
  it("holds five minutes of snapshots: ceil(300 s / interval) + 1 points", () => {
    assert.equal(TREND_WINDOW_MS, 300_000);
    assert.equal(new TrendHistory(1000).capacity, 301);
    assert.equal(new TrendHistory(200).capacity, 1501);
    assert.equal(new TrendHistory(7000).capacity, 44); // 300 / 7 = 42.9 → 43, + 1
    assert.equal(new TrendHistory(60_000).capacity, 6);
  });

  it("one point per snapshot: per-second rates between consecutive snapshots (none for the first), each partition's lag", () => {
    const t = feed(new TrendHistory(1000), [
      snapshot(0, { events: 0, messages: 0, dispatched: 0 }, [partition(0, 0, 4), partition(1, 0, 0)]),
      snapshot(1, { events: 2, messages: 10, dispatched: 8 }, [partition(0, 2, 6), partition(1, 0, 3)]),
      snapshot(3, { events: 2, messages: 16, dispatched: 16 }, [partition(0, 6, 6), partition(1, 3, 3)]),
    ]);
    assert.equal(t.spanMs, 3000);
    assert.deepEqual(t.membershipEventsPerSec, [null, 2, 0]);
    assert.deepEqual(t.messagesCommittedPerSec, [null, 10, 3]); // (16 - 10) / 2 s
    assert.deepEqual(t.relayDispatchedPerSec, [null, 8, 4]);
    assert.deepEqual(t.lag, [{ partition: 0, values: [4, 4, 0] }, { partition: 1, values: [0, 3, 0] }]);
  });

  it("is bounded: at a 60 s interval six points, the oldest dropped, the span that of the six", () => {
    const history = new TrendHistory(60_000);
    const t = feed(history, Array.from({ length: 10 }, (_, i) => snapshot(i * 60, { events: i * i * 60 })));
    // events/s between minute i-1 and i: (i² - (i-1)²) × 60 / 60 = 2i - 1; points 4..9 remain
    assert.deepEqual(t.membershipEventsPerSec, [7, 9, 11, 13, 15, 17]);
    assert.equal(t.spanMs, 5 * 60_000);
    assert.equal(t.lag[0]!.values.length, 6);
  });

  it("a gap where there is no value: a server restart (no rate), a partition without a checkpoint or not there yet", () => {
    const t = feed(new TrendHistory(1000), [
      snapshot(0, { events: 0 }, [partition(0, 5, 5)]),
      snapshot(1, { events: 1 }, [partition(0, 5, 7), partition(1, null, 2)]),
      snapshot(2, { events: 0, startedAtMs: 2 }, [partition(0, 7, 7), partition(1, 2, 2)]),
      snapshot(3, { events: 3, startedAtMs: 2 }, [partition(0, 7, 9), partition(1, 2, 2)]),
    ]);
    assert.deepEqual(t.membershipEventsPerSec, [null, 1, null, 3]);
    assert.deepEqual(t.lag, [{ partition: 0, values: [0, 2, 0, 2] }, { partition: 1, values: [null, null, 0, 0] }]);
  });
});

describe("dashboard trends: sparkline text", () => {
  it("one cell per value, linear from ▁ (0) to █ (the largest), the newest at the right, padded on the left", () => {
    assert.equal(sparkline([0, 1, 2, 3, 4, 5, 6, 7], 8), "▁▂▃▄▅▆▇█");
    // top 4: 1 → round(1.75) = 2 ▃, 2 → round(3.5) = 4 ▅, 3 → round(5.25) = 5 ▆
    assert.equal(sparkline([1, 2, 3, 4], 6), "  ▃▅▆█");
    assert.equal(sparkline([0, 0, 0], 3), "▁▁▁", "nothing happening is the lowest bar");
    assert.equal(sparkline([], 4), "    ");
    assert.equal(sparkline([1, 0], 0), "");
  });

  it("anything above 0 is at least ▂; a missing value is a space; a given top is the scale", () => {
    assert.equal(sparkline([100, 0.1, 0], 3), "█▂▁");
    assert.equal(sparkline([null, null, 2, 4], 4), "  ▅█");
    assert.equal(sparkline([null, null], 2), "  ");
    // on a shared top of 8: 2 → round(1.75) = 2 ▃, 8 → █; above the top stays █
    assert.equal(sparkline([2, 8, 16], 3, 8), "▃██");
    assert.equal(sparkline([3], 1, 0), "▁", "a top of 0: nothing to scale");
  });

  it("more values than cells: each cell the largest of a run of ceil(n / cells), runs counted from the newest", () => {
    // 10 values in 4 cells: runs of 3 from the newest: [0] [1 2 3] [4 5 6] [7 8 9] → maxima 0 3 6 9
    // on top 9: 0 ▁, 3 → round(2.33) = 2 ▃, 6 → round(4.67) = 5 ▆, 9 █
    assert.equal(sparkline([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 4), "▁▃▆█");
    // 9 values in 4 cells: runs of 3 → three cells, one space on the left
    assert.equal(sparkline([9, 0, 0, 0, 0, 0, 0, 0, 0], 4), " █▁▁");
    // a peak inside a run stays visible
    assert.equal(sparkline([0, 0, 5, 0, 0, 0], 2), "█▁");
    assert.equal(sparkline([null, null, 3, null, null, null], 2), "█ ");
  });

  it("seriesMax and formatSpan", () => {
    assert.equal(seriesMax([[1, null, 3], [2], []]), 3);
    assert.equal(seriesMax([[null], []]), 0);
    assert.deepEqual([0, 999, 45_000, 60_000, 299_000, 3_600_000, 7_500_000].map(formatSpan), ["0s", "1s", "45s", "1m", "4m 59s", "1h", "2h 5m"]);
  });
});

describe("dashboard trends: components at 100 columns", () => {
  const trends: TrendValues = {
    spanMs: 3000, windowMs: TREND_WINDOW_MS,
    membershipEventsPerSec: [null, 1, 2, 4],
    messagesCommittedPerSec: [null, 0, 0, 0],
    relayDispatchedPerSec: [null, null, null, null],
    lag: [{ partition: 0, values: [5, 10, 0, 0] }, { partition: 1, values: [null, 2, 2, 0] }],
  };

  it("Trends: a sparkline per rate with its newest and largest value, and the span covered", () => {
    const lines = frame(render(<Trends trends={trends} width={WIDTH} />));
    assert.match(lines[0]!, /^trends\s+last 3s \(up to 5m\)$/);
    // top 4: 1 → round(1.75) = 2 ▃, 2 → round(3.5) = 4 ▅, 4 █; the first point has no rate
    assert.match(lines[1]!, /^membership events\/s\s+ ▃▅█  now 4\.0  max 4\.0$/);
    assert.match(lines[2]!, /^messages\/s\s+ ▁▁▁  now 0\.0  max 0\.0$/);
    assert.match(lines[3]!, /^dispatched\/s\s+now -  max -$/);
    for (const l of lines) assert.ok(l.length <= WIDTH, `fits ${WIDTH} columns: ${l}`);
  });

  it("Partitions with trends: each partition's lag over time on one scale (the largest lag shown)", () => {
    const lines = frame(render(<Partitions partitions={[partition(0, 10, 10), partition(1, 3, 3)]} width={WIDTH} trends={trends} />));
    assert.match(lines[0]!, /WINDOW READ\s+LAG TREND ≤10$/);
    // top 10: 5 → round(3.5) = 4 ▅, 10 █, 0 ▁; 2 → round(1.4) = 1 ▂
    assert.ok(lines[1]!.endsWith(" ▅█▁▁"), lines[1]);
    assert.ok(lines[2]!.endsWith("  ▂▂▁"), lines[2]);
    for (const l of lines) assert.ok(l.length <= WIDTH, `fits ${WIDTH} columns: ${l}`);
    // the window bar shares the room left of the fixed columns with the trend: (100 - 69 - 3) / 2 =
    // 14 cells, full for a caught-up partition
    assert.match(lines[1]!, /^0\s+OK\s+10\s+0\s+10\s+0\s+█{14} /);
  });

  it("Dashboard with trends: the trends section after the rates, within the width; shorter terminal keeps the frame shorter", () => {
    const many = { ...snapshot(3), audit: Array.from({ length: 8 }, (_, i) => ({ time: `2026-11-29T23:00:0${i}.000Z`, principal: `p${i}`, rpc: "/qim.admin.v1.GroupService/AddMembers", result: "OK" })) };
    const connected: ConnectionState = { kind: "connected" };
    const lines = frame(render(<Dashboard endpoint="e:1" intervalMs={1000} snapshot={many} rates={null} trends={trends} state={connected} paused={false} width={WIDTH} />));
    const text = lines.join("\n");
    assert.ok(text.indexOf("membership events/s -") < text.indexOf("trends  last 3s"), "trends come after the rates");
    assert.match(text, /membership events\/s\s+ ▃▅█/);
    for (const l of lines) assert.ok(l.length <= WIDTH, `fits ${WIDTH} columns: ${l}`);
    const short = frame(render(<Dashboard endpoint="e:1" intervalMs={1000} snapshot={many} rates={null} trends={trends} state={connected} paused={false} width={WIDTH} height={28} />));
    assert.ok(short.length < 28, `${short.length} rows for a 28-row terminal`);
    assert.ok(short.some((l) => /^23:00:07Z\s+p7\s/.test(l)), "the newest audit entry stays");
    assert.ok(short.some((l) => /trends\s+last 3s/.test(l)), "the trends stay");
  });

  it("pausing keeps the trends on screen with their snapshot while new ones arrive", async () => {
    const quits: Quit[] = [];
    const props = { endpoint: "e:1", intervalMs: 1000, state: { kind: "connected" } as ConnectionState, onQuit: (how: Quit) => quits.push(how) };
    const history = new TrendHistory(1000);
    const [a, b, c] = [snapshot(0, { events: 0 }), snapshot(1, { events: 2 }), snapshot(2, { events: 3 })];
    history.record(a, null);
    const tb = history.record(b, rates(a, b));
    const r = render(<DashboardApp {...props} snapshot={b} rates={rates(a, b)} trends={tb} />);
    // [null, 2]: top 2 → █
    assert.match(await until(r, (t) => /membership events\/s\s+ █  now 2\.0/.test(t)), /membership events\/s\s+ █  now 2\.0/);
    r.stdin.write("p");
    await until(r, (t) => /PAUSED/.test(t));
    const tc = history.record(c, rates(b, c));
    r.rerender(<DashboardApp {...props} snapshot={c} rates={rates(b, c)} trends={tc} />);
    const paused = await until(r, () => false);
    assert.match(paused, /membership events\/s\s+ █  now 2\.0/, "paused: the trends shown stay");
    r.stdin.write("p");
    // [null, 2, 1]: top 2 → █, 1 → round(3.5) = 4 ▅
    const resumed = await until(r, (t) => /membership events\/s\s+ █▅  now 1\.0/.test(t));
    assert.match(resumed, /membership events\/s\s+ █▅  now 1\.0  max 2\.0/);
    r.unmount();
    assert.deepEqual(quits, []);
  });
});
