/**
 * SESSION_DELTA (spec 002 §5) and J-2: the merge window overwrites, never sums; the client-side
 * applier applies a frame only when its version is greater, overwrites with its absolute values,
 * and asks for a pull on a gap. The expected values are the frames' own numbers (absolute values),
 * worked out by hand or, in the property test, by picking the newest frame per conversation.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { existsSync } from "node:fs";
import { parseUuid, type Uuid } from "../../../core/index.js";
import { SessionDeltaApplier, SessionDeltaMerger, type SessionBadge, type SessionChange, type SessionRow, type SessionDeltaFrame, type SessionFrame } from "../../../core/session-view/index.js";

const tenant = parseUuid("00000000-0000-4000-8000-0000000000aa", "t");
const user = parseUuid("00000000-0000-4000-8000-0000000000bb", "u");
const conv = (n: number): Uuid => parseUuid(`00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`, "c");

function row(c: number, version: number, unread: number, mentions = 0): SessionRow {
  return {
    tenant, user, conversation: conv(c), lastActivityId: "", lastActivitySeq: version, headSeq: version, unread, unreadExact: true, mentions, mentionFirstSeq: mentions > 0 ? 1 : null,
    pinRank: null, muted: false, archived: false, hiddenBeforeSeq: 0, deletedBeforeSeq: 0, deleted: false, version,
  };
}
function change(rows: SessionRow[], badge: Omit<SessionBadge, "version">): SessionChange {
  const version = Math.max(...rows.map((r) => r.version));
  return { tenant, user, rows, badge: { ...badge, version }, version, drivingEventId: `ev-${version}`, structural: false };
}
function frame(c: number, version: number, unread: number, previousVersion: number, mentions = 0): SessionDeltaFrame {
  const r = row(c, version, unread, mentions);
  return {
    kind: "delta", tenant, user, version, previousVersion, drivingEventId: `ev-${version}`,
    row: { conversation: r.conversation, lastActivityId: "", headSeq: version, unread, unreadExact: true, mentions, mentionFirstSeq: r.mentionFirstSeq, pinRank: null, muted: false, archived: false, hiddenBeforeSeq: 0, deletedBeforeSeq: 0, deleted: false },
  };
}

describe("merge window (spec 002 §5.1)", () => {
  it("keeps only the newest frame per (user, conversation) and the newest badge; stamps the watcher's previousVersion chain", () => {
    const merger = new SessionDeltaMerger(60_000);
    const got: SessionFrame[] = [];
    merger.watch(tenant, user, (f) => got.push(f));
    merger.push(change([row(1, 1, 1)], { totalUnread: 1, totalMention: 0, mutedUnread: 0 }));
    merger.push(change([row(1, 2, 2)], { totalUnread: 2, totalMention: 0, mutedUnread: 0 }));
    merger.push(change([row(2, 3, 5, 1)], { totalUnread: 7, totalMention: 1, mutedUnread: 0 }));
    // an older frame arriving late inside the window is dropped, not summed
    merger.push(change([row(1, 1, 1)], { totalUnread: 1, totalMention: 0, mutedUnread: 0 }));
    assert.equal(got.length, 0);
    merger.flush();
    assert.deepEqual(got.map((f) => [f.kind, f.version, f.previousVersion, f.kind === "delta" ? f.row.unread : f.totalUnread]), [
      ["delta", 2, 0, 2],
      ["delta", 3, 2, 5],
      ["badge", 3, 3, 7],
    ]);
    merger.push(change([row(2, 4, 0)], { totalUnread: 2, totalMention: 0, mutedUnread: 0 }));
    merger.flush();
    assert.deepEqual(got.slice(3).map((f) => [f.kind, f.version, f.previousVersion]), [["delta", 4, 3], ["badge", 4, 4]]);
    merger.stop();
  });

  it("buffers nothing for users nobody watches", () => {
    const merger = new SessionDeltaMerger(60_000);
    const got: SessionFrame[] = [];
    merger.push(change([row(1, 1, 1)], { totalUnread: 1, totalMention: 0, mutedUnread: 0 }));
    const stop = merger.watch(tenant, user, (f) => got.push(f));
    merger.flush();
    assert.equal(got.length, 0);
    stop();
    merger.stop();
  });
});

describe("J-2: the applier is absolute and idempotent", () => {
  it("the same frame delivered 100 times leaves the frame's absolute value, applied once", () => {
    const a = new SessionDeltaApplier();
    const f = frame(1, 5, 7, 0, 2);
    for (let i = 0; i < 100; i++) a.apply(f);
    assert.equal(a.rows.get(conv(1))!.unread, 7);
    assert.equal(a.rows.get(conv(1))!.mentions, 2);
    assert.deepEqual(a.counts, { applied: 1, stale: 99, gap: 0 });
  });

  it("frames of older versions are applied 0 times, in any order after a newer one", () => {
    const a = new SessionDeltaApplier();
    a.apply(frame(1, 10, 3, 0));
    for (const v of [9, 1, 5, 10, 2]) assert.equal(a.apply(frame(1, v, 100 + v, 0)), "stale");
    assert.equal(a.rows.get(conv(1))!.unread, 3);
    assert.deepEqual(a.counts, { applied: 1, stale: 5, gap: 0 });
  });

  it("a previousVersion above what it has seen is a gap: nothing applied, a pull asked; the pull's state then takes frames again", () => {
    const a = new SessionDeltaApplier();
    a.apply(frame(1, 2, 1, 0));
    assert.equal(a.apply(frame(2, 9, 4, 7)), "gap");
    assert.equal(a.needsPull, true);
    assert.equal(a.rows.has(conv(2)), false);
    a.load([{ ...frame(2, 7, 3, 0).row, version: 7 }], { totalUnread: 3, totalMention: 0, mutedUnread: 0, version: 7 });
    assert.equal(a.needsPull, false);
    assert.equal(a.apply(frame(2, 9, 4, 7)), "applied");
    assert.equal(a.rows.get(conv(2))!.unread, 4);
  });

  it("a deleted row stays deleted against older frames", () => {
    const a = new SessionDeltaApplier();
    a.apply(frame(1, 3, 2, 0));
    const del = frame(1, 4, 0, 3);
    a.apply({ ...del, row: { ...del.row, deleted: true } });
    assert.equal(a.apply(frame(1, 3, 2, 4)), "stale");
    assert.deepEqual(a.visible(), []);
  });

  it("property: any delivery of duplicated, reordered frames ends at the newest frame's values per conversation", () => {
    let seed = 12;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    for (let round = 0; round < 200; round++) {
      const frames: SessionDeltaFrame[] = [];
      for (let v = 1; v <= 30; v++) frames.push(frame(1 + rand(4), v, rand(300), 0, rand(5)));
      const delivered: SessionDeltaFrame[] = [];
      for (let i = 0; i < 90; i++) delivered.push(frames[rand(frames.length)]!);
      const a = new SessionDeltaApplier();
      for (const f of delivered) a.apply(f);
      const newest = new Map<string, SessionDeltaFrame>();
      for (const f of delivered) if ((newest.get(f.row.conversation)?.version ?? 0) < f.version) newest.set(f.row.conversation, f);
      assert.equal(a.rows.size, newest.size);
      for (const [c, f] of newest) {
        assert.equal(a.rows.get(c)!.unread, f.row.unread);
        assert.equal(a.rows.get(c)!.mentions, f.row.mentions);
        assert.equal(a.rows.get(c)!.version, f.version);
      }
    }
  });

  it("code-level: the applier's source has no additive update of an unread or mention field (spec 002 J-2)", () => {
    let dir = dirname(fileURLToPath(import.meta.url));
    while (!existsSync(join(dir, "package.json"))) dir = dirname(dir);
    const source = readFileSync(join(dir, "core", "session-view", "applier.ts"), "utf8");
    const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
    const field = /(unread|mention|totalUnread|totalMention|mutedUnread)\w*/i;
    const offending = code.split("\n").filter((line) => field.test(line) && (/\+=|-=|\+\+|--/.test(line) || new RegExp(`${field.source}\\s*[:=][^,;}]*[+-]\\s*[\\w(]`, "i").test(line)));
    assert.deepEqual(offending, []);
    // the check itself catches the forbidden forms
    for (const bad of ["held.unread += frame.row.unread;", "this.badge.totalUnread = held.totalUnread + 1;", "unread: held.unread + f.unread,", "mentions++"]) {
      assert.ok(field.test(bad) && (/\+=|-=|\+\+|--/.test(bad) || new RegExp(`${field.source}\\s*[:=][^,;}]*[+-]\\s*[\\w(]`, "i").test(bad)), bad);
    }
  });
});
