/**
 * The pure parts of the session view (spec 002 §6): the cursor's bytes, the snapshot's order and
 * keyset pages, revisions under content and structural changes, TTL and LRU eviction. Rows are
 * built by hand; every expected order and page below was worked out by hand from the spec's keys.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InvalidArgumentError, parseUuid, type Uuid } from "../../../core/index.js";
import { decodeCursor, encodeCursor, MAX_CONVERSATIONS_PER_USER, SnapshotCache, ZONE, type SessionBadge, type SessionChange, type SessionRow } from "../../../core/session-view/index.js";

const tenant = parseUuid("00000000-0000-4000-8000-0000000000aa", "t");
const user = parseUuid("00000000-0000-4000-8000-0000000000bb", "u");
/** Conversation ids whose text order is their letter order. */
const conv = (n: number): Uuid => parseUuid(`00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`, "c");
/** Message ids whose text order is their number order. */
const act = (n: number): string => `0190aaaa000070008000${n.toString(16).padStart(12, "0")}`;

function row(c: number, activity: number | null, pinRank: number | null, version = 1, extra: Partial<SessionRow> = {}): SessionRow {
  return {
    tenant, user, conversation: conv(c), lastActivityId: activity === null ? "" : act(activity), lastActivitySeq: activity ?? 0, headSeq: activity ?? 0,
    unread: 0, unreadExact: true, mentions: 0, mentionFirstSeq: null, pinRank, muted: false, archived: false, hiddenBeforeSeq: 0, deletedBeforeSeq: 0, deleted: false, version, ...extra,
  };
}
const badge: SessionBadge = { totalUnread: 0, totalMention: 0, mutedUnread: 0, version: 1 };
const change = (rows: SessionRow[], structural: boolean): SessionChange => ({ tenant, user, rows, badge, version: Math.max(...rows.map((r) => r.version)), drivingEventId: "e", structural });

// A pinned rank 2; B, C pinned rank 1 (C newer); D, E normal with the same activity (D's id first); F older; G no activity.
const A = 1, B = 2, C = 3, D = 4, E = 5, F = 6, G = 7;
function rows(): SessionRow[] {
  return [row(A, 5, 2), row(B, 1, 1), row(C, 9, 1), row(D, 9, null), row(E, 9, null), row(F, 3, null), row(G, null, null)];
}
const names = (rs: readonly SessionRow[]) => rs.map((r) => "?ABCDEFG"[Number.parseInt(r.conversation.slice(-12), 16)]).join("");

function source(data: () => SessionRow[]) {
  let loads = 0;
  return { rows: async () => (loads++, data()), get loads() { return loads; } };
}

describe("page cursor (spec 002 §6.2)", () => {
  it("is base64url of the PageCursor message, field by field as worked out by hand", () => {
    const text = encodeCursor({ snapshotRevision: 7, zone: ZONE.NORMAL, pinRank: 0, lastActivityId: act(9), conversation: conv(4) });
    const expected = [0x08, 7, 0x10, 2, 0x22, 16];
    // tag 1 varint 7; tag 2 varint 2 (NORMAL); no pin_rank outside PINNED; tag 4 len 16; tag 5 len 16
    const bytes = Buffer.from(text, "base64url");
    assert.deepEqual([...bytes.subarray(0, 6)], expected);
    assert.equal(bytes.subarray(6, 22).toString("hex"), "0190aaaa000070008000000000000009");
    assert.deepEqual([...bytes.subarray(22, 24)], [0x2a, 16]);
    assert.equal(bytes.subarray(24).toString("hex"), "00000000000040008000000000000004");
    assert.equal(bytes.length, 40);
    assert.doesNotMatch(text, /[+/=]/);
    const pinned = Buffer.from(encodeCursor({ snapshotRevision: 300, zone: ZONE.PINNED, pinRank: 2, lastActivityId: "", conversation: conv(1) }), "base64url");
    // 300 = 0xac 0x02 as a varint; tag 3 varint 2; no activity: 16 zero bytes
    assert.deepEqual([...pinned.subarray(0, 9)], [0x08, 0xac, 0x02, 0x10, 1, 0x18, 2, 0x22, 16]);
    assert.equal(pinned.subarray(9, 25).toString("hex"), "0".repeat(32));
    assert.deepEqual(decodeCursor(encodeCursor({ snapshotRevision: 300, zone: ZONE.PINNED, pinRank: 2, lastActivityId: "", conversation: conv(1) })), { snapshotRevision: 300, zone: ZONE.PINNED, pinRank: 2, lastActivityId: "", conversation: conv(1) });
  });

  it("refuses anything else as INVALID_ARGUMENT(cursor)", () => {
    const good = Buffer.from(encodeCursor({ snapshotRevision: 1, zone: ZONE.NORMAL, pinRank: 0, lastActivityId: act(1), conversation: conv(1) }), "base64url");
    const bad = [
      "", "!!!", "a+b/", `${good.toString("base64url")}=`, good.subarray(0, 30).toString("base64url"),
      Buffer.concat([good, Buffer.from([0x30, 1])]).toString("base64url"), // unknown field 6
      Buffer.from([0x10, 2, 0x22, 16, ...good.subarray(6, 22), 0x2a, 16, ...good.subarray(24)]).toString("base64url"), // no revision
      Buffer.from([0x08, 1, 0x10, 3, ...good.subarray(4)]).toString("base64url"), // zone 3
    ];
    for (const text of bad) {
      assert.throws(() => decodeCursor(text), (err: unknown) => err instanceof InvalidArgumentError && err.field === "cursor", JSON.stringify(text));
    }
  });
});

describe("snapshot pages (spec 002 §6.1–§6.3)", () => {
  it("orders the pinned zone by pin_rank, activity DESC, id; then the normal zone by activity DESC, id", async () => {
    const cache = new SnapshotCache(source(rows));
    const all = await cache.page(tenant, user, { limit: 200 });
    assert.equal(names(all.rows), "CBADEFG");
    assert.equal(all.nextCursor, null);
    assert.equal(all.snapshotRevision, 1);
    assert.equal(all.projectionComplete, true);
  });

  it("pages strictly after the cursor, with no duplicate and no gap, to a last page without cursor", async () => {
    const cache = new SnapshotCache(source(rows));
    const seen: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const p = await cache.page(tenant, user, { limit: 2, ...(cursor ? { cursor } : {}) });
      assert.equal(p.snapshotRevision, 1);
      assert.equal(p.projectionComplete, true);
      seen.push(names(p.rows));
      if (!p.nextCursor) break;
      cursor = p.nextCursor;
    }
    assert.deepEqual(seen, ["CB", "AD", "EF", "G"]);
  });

  it("a new message mid-way keeps the revision; the moved row is not paged again (it comes as a delta)", async () => {
    const cache = new SnapshotCache(source(rows));
    const p1 = await cache.page(tenant, user, { limit: 2 });
    const p2 = await cache.page(tenant, user, { limit: 2, cursor: p1.nextCursor! });
    assert.equal(names(p2.rows), "AD");
    cache.apply(change([row(F, 15, null, 2, { unread: 1 })], false));
    const p3 = await cache.page(tenant, user, { limit: 2, cursor: p2.nextCursor! });
    assert.equal(p3.snapshotRevision, 1);
    assert.equal(p3.projectionComplete, true);
    assert.equal(names(p3.rows), "EG");
    assert.equal(p3.nextCursor, null);
    // the snapshot itself has F at the top of the normal zone
    assert.equal(names((await cache.page(tenant, user, { limit: 200 })).rows), "CBAFDEG");
  });

  it("a structural change mid-way gives a new revision; the old cursor gets the new first page, projection_complete=false", async () => {
    const cache = new SnapshotCache(source(rows));
    const p1 = await cache.page(tenant, user, { limit: 2 });
    cache.apply(change([row(E, 9, 0, 2)], true));
    const again = await cache.page(tenant, user, { limit: 2, cursor: p1.nextCursor! });
    assert.equal(again.snapshotRevision, 2);
    assert.equal(again.projectionComplete, false);
    assert.equal(names(again.rows), "EC");
    const next = await cache.page(tenant, user, { limit: 2, cursor: again.nextCursor! });
    assert.equal(names(next.rows), "BA");
    assert.equal(next.projectionComplete, true);
  });

  it("a row whose pin rank moved counts as structural even when not flagged; an older version changes nothing", async () => {
    const cache = new SnapshotCache(source(rows));
    await cache.page(tenant, user);
    cache.apply(change([row(G, null, 5, 2)], false));
    assert.equal(cache.revisionOf(tenant, user), 2);
    cache.apply(change([row(G, 99, null, 1)], false));
    assert.equal(names((await cache.page(tenant, user, { limit: 200 })).rows), "CBAGDEF");
    assert.equal(cache.revisionOf(tenant, user), 2);
  });

  it("a deleted row leaves the list and a new revision is issued; a new conversation joins in place", async () => {
    const cache = new SnapshotCache(source(rows));
    await cache.page(tenant, user);
    cache.apply(change([row(D, 9, null, 2, { deleted: true })], true));
    cache.apply(change([row(9, 20, null, 3)], false));
    const p = await cache.page(tenant, user, { limit: 200 });
    assert.equal(p.snapshotRevision, 2);
    assert.equal(p.rows.map((r) => r.conversation).join(","), [C, B, A, 9, E, F, G].map(conv).join(","));
  });

  it("expires snapshot_ttl after its last page and reloads with the next revision", async () => {
    let now = 1_000;
    const src = source(rows);
    const cache = new SnapshotCache(src, { now: () => now, ttlMs: 300_000 });
    await cache.page(tenant, user);
    now += 299_999;
    assert.equal((await cache.page(tenant, user)).snapshotRevision, 1);
    now += 299_999;
    assert.equal((await cache.page(tenant, user)).snapshotRevision, 1);
    assert.equal(src.loads, 1);
    now += 300_000;
    assert.equal((await cache.page(tenant, user)).snapshotRevision, 2);
    assert.equal(src.loads, 2);
  });

  it("evicts the least recently used snapshot over the global row bound; the user's revision is remembered", async () => {
    const other = parseUuid("00000000-0000-4000-8000-0000000000cc", "u");
    const cache = new SnapshotCache(source(rows), { rowsMax: 10 });
    await cache.page(tenant, user);
    assert.equal(cache.heldRows, 7);
    await cache.page(tenant, other);
    assert.equal(cache.heldUsers, 1);
    assert.equal(cache.heldRows, 7);
    assert.equal(cache.revisionOf(tenant, user), null);
    assert.equal((await cache.page(tenant, user)).snapshotRevision, 2);
    assert.equal(cache.revisionOf(tenant, other), null);
  });

  it("a row whose last_activity_id goes down keeps its place: a paged row is not paged again (issue 23)", async () => {
    const cache = new SnapshotCache(source(rows));
    const p1 = await cache.page(tenant, user, { limit: 5 });
    assert.equal(names(p1.rows), "CBADE");
    // D's head now carries an older id (1 < F's 3): by its own id D would fall behind the cursor (E)
    cache.apply(change([row(D, 1, null, 2)], false));
    const p2 = await cache.page(tenant, user, { limit: 5, cursor: p1.nextCursor! });
    assert.equal(names(p2.rows), "FG");
    assert.deepEqual([p2.snapshotRevision, p2.projectionComplete], [1, true]);
    // the row itself is served as the engine has it; only its place is kept
    const whole = await cache.page(tenant, user, { limit: 200 });
    assert.equal(names(whole.rows), "CBADEFG");
    assert.equal(whole.rows[3]!.lastActivityId, act(1));
    // newer ids move rows up as before: F (30) above D (20) above E (9)
    cache.apply(change([row(D, 20, null, 3)], false));
    cache.apply(change([row(F, 30, null, 2)], false));
    assert.equal(names((await cache.page(tenant, user, { limit: 200 })).rows), "CBAFDEG");
  });

  it("holds at most max_conversations_per_user rows and says it is truncated, apart from projection_complete", async () => {
    const cache = new SnapshotCache(source(rows), { maxPerUser: 3 });
    const p = await cache.page(tenant, user, { limit: 200 });
    assert.equal(names(p.rows), "CBA");
    assert.equal(p.total, 3);
    assert.deepEqual([p.snapshotTruncated, p.maxConversationsPerUser, p.projectionComplete], [true, 3, true]);
    // walked page by page: the 3 rows once each, every page truncated and complete, then the end
    const p1 = await cache.page(tenant, user, { limit: 2 });
    const p2 = await cache.page(tenant, user, { limit: 2, cursor: p1.nextCursor! });
    assert.deepEqual([names(p1.rows), names(p2.rows), p2.nextCursor], ["CB", "A", null]);
    for (const q of [p1, p2]) assert.deepEqual([q.snapshotTruncated, q.projectionComplete], [true, true]);
    // a structural change: the old cursor still means "start again", and the cut is still stated
    cache.apply(change([row(A, 5, null, 2)], true));
    const again = await cache.page(tenant, user, { limit: 2, cursor: p1.nextCursor! });
    assert.deepEqual([again.projectionComplete, again.snapshotTruncated, again.snapshotRevision], [false, true, 2]);
    // an untruncated snapshot says so
    const whole = await new SnapshotCache(source(rows)).page(tenant, user, { limit: 200 });
    assert.deepEqual([whole.snapshotTruncated, whole.maxConversationsPerUser], [false, MAX_CONVERSATIONS_PER_USER]);
  });

  it("refuses a limit outside 1..200 and a bad user before reading anything", async () => {
    const src = source(rows);
    const cache = new SnapshotCache(src);
    for (const limit of [0, 201, 1.5]) await assert.rejects(cache.page(tenant, user, { limit }), (e: unknown) => e instanceof InvalidArgumentError && e.field === "limit");
    await assert.rejects(cache.page(tenant, "u"), (e: unknown) => e instanceof InvalidArgumentError && e.field === "user");
    await assert.rejects(cache.page(tenant, user, { cursor: "%%" }), (e: unknown) => e instanceof InvalidArgumentError && e.field === "cursor");
    assert.equal(src.loads, 0);
  });
});

describe("a held snapshot and the writes of other processes (the user's stored version)", () => {
  it("re-reads the rows only when the stored version moved; content moves keep the revision, a row gone issues a new one", async () => {
    let version = 1;
    let data = rows();
    let rowReads = 0;
    let versionReads = 0;
    const src = { rows: async () => (rowReads++, data), storedVersion: async () => (versionReads++, version) };
    const cache = new SnapshotCache(src);
    const first = await cache.page(tenant, user, { limit: 200 });
    assert.equal(names(first.rows), "CBADEFG");
    assert.deepEqual([rowReads, versionReads], [1, 1]);

    // the store changed without a stored write (the version did not move): no re-read
    data = rows().filter((r) => r.conversation !== conv(E));
    const same = await cache.page(tenant, user, { limit: 200 });
    assert.equal(names(same.rows), "CBADEFG");
    assert.deepEqual([rowReads, versionReads], [1, 2]);

    // another node stores F with newer activity (version 2): F leads the normal zone, same revision
    data = rows().map((r) => (r.conversation === conv(F) ? row(F, 15, null, 2) : r));
    version = 2;
    const moved = await cache.page(tenant, user, { limit: 200 });
    assert.equal(names(moved.rows), "CBAFDEG");
    assert.equal(moved.snapshotRevision, 1);
    assert.equal(rowReads, 2);

    // another node's write takes D out (a leave): gone from the page, under a new revision
    data = data.filter((r) => r.conversation !== conv(D));
    version = 3;
    const gone = await cache.page(tenant, user, { limit: 200 });
    assert.equal(names(gone.rows), "CBAFEG");
    assert.equal(gone.snapshotRevision, 2);
    assert.equal(gone.total, 6);
  });
});
