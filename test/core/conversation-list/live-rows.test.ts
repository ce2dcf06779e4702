/**
 * LiveRowCache (row.ts): the live row of a watched user moved record by record between stored
 * writes, instead of liveRow over every held record at every hand-off. A hand-worked case, then
 * the cache against liveRow — the definition — after every step of random histories with late
 * records, own messages, mentions, the user's own membership change and stored writes.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeRow, liveRow, LiveRowCache, NewRowCache, type InHandEntry, type RowState } from "../../../core/index.js";

const U = "a".repeat(32);
const OTHER = "b".repeat(32);

function entry(seq: number, o: { sender?: string; mentions?: string; membership?: string; control?: boolean } = {}): InHandEntry {
  return {
    seq, messageId: seq.toString(16).padStart(32, "0"), senderHex: o.sender ?? OTHER, control: o.control ?? false, countsUnread: true,
    createdAt: 1_700_000_000_000 + seq, mentionsHex: o.mentions ?? "", membershipHex: o.membership ?? "", eventId: `e${seq}`,
  };
}

/** A stored row: active since 0, head `head`, `unread` counted from `base`, exact. */
function stored(head: number, unread: number, base: number, version = 1): RowState {
  return { ...decodeRow(`0||A|${base}|0|0||0|0|${"0".repeat(32)}|${head}|${head}|${unread}|${base}|1|0||0|${version}|`) };
}

test("by hand: records appended one by one move the row as a recompute over all of them would", () => {
  const cache = new LiveRowCache();
  const row = stored(10, 2, 8);
  const held: InHandEntry[] = [];
  const step = () => cache.of("r1", row, held, U);
  held.push(entry(11));
  assert.deepEqual([step()?.headSeq, step()?.unread], [11, 3], "11 from another member counts");
  held.push(entry(12, { sender: U }));
  assert.deepEqual([step()?.headSeq, step()?.unread], [12, 3], "12 is the user's own: it does not count");
  held.push(entry(13, { mentions: OTHER + U }));
  const r13 = step()!;
  assert.deepEqual([r13.headSeq, r13.unread, r13.mentions, r13.mentionFirst, r13.lastActivitySeq], [13, 4, 1, 13, 13]);
  held.push(entry(9));
  assert.equal(step()?.unread, 4, "9 is at or below the stored head: nothing");
  held.push(entry(15), entry(14));
  // 14 arrives after 15: older than a record already applied, so the row is made again in seq order
  assert.deepEqual([step()?.headSeq, step()?.unread], [15, 6], "by hand: 2 + 11, 13, 14, 15");
  held.push(entry(16, { control: true, membership: OTHER + U }));
  assert.equal(step(), null, "the user's own membership changed: recompute (null), as liveRow says");
  // a stored write (a new version) is the new base
  const after = stored(16, 0, 16, 2);
  assert.deepEqual([cache.of("r1", after, [entry(17)], U)?.unread, cache.of("r1", after, [entry(17), entry(18)], U)?.unread], [1, 2]);
});

test("random histories: after every step the cache answers what liveRow answers", () => {
  let seed = 12345;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (let h = 0; h < 300; h++) {
    const cache = new LiveRowCache();
    let version = 1;
    let row = stored(100, Math.floor(rnd() * 5), 95, version);
    let held: InHandEntry[] = [];
    let next = 101;
    for (let s = 0; s < 40; s++) {
      const x = rnd();
      if (x < 0.06) {
        // a stored write took what was held
        version++;
        row = stored(next - 1, Math.floor(rnd() * 5), next - 3, version);
        held = [];
      } else if (x < 0.14 && held.length > 1) {
        // a late record: a seq below one held already (never a seq held twice: the window dedupes)
        const taken = new Set(held.map((e) => e.seq));
        const late = 95 + Math.floor(rnd() * (next - 95));
        if (!taken.has(late)) held.push(entry(late));
      } else if (x < 0.17) {
        held.push(entry(next++, { control: true, membership: rnd() < 0.5 ? U : OTHER }));
      } else {
        held.push(entry(next++, { sender: rnd() < 0.3 ? U : OTHER, mentions: rnd() < 0.2 ? U : "" }));
      }
      const want = liveRow(row, held, U);
      assert.deepEqual(cache.of("row", row, held, U), want, `history ${h}, step ${s}: seqs ${held.map((e) => e.seq).join(",")}`);
    }
  }
});

test("the cache is bounded: past its maximum it starts again, and answers stay right", () => {
  const cache = new LiveRowCache(3);
  const row = stored(10, 0, 10);
  for (let i = 0; i < 10; i++) assert.equal(cache.of(`k${i}`, row, [entry(11), entry(12)], U)?.unread, 2);
  assert.equal(cache.of("k0", row, [entry(11), entry(12), entry(13)], U)?.unread, 3);
});

test("NewRowCache by hand: a row with no stored row is moved from its one recompute; what the recompute counted is not counted again", () => {
  const cache = new NewRowCache();
  const held: InHandEntry[] = [entry(1, { control: true, membership: OTHER + U }), entry(2)];
  // the recompute read while 1 (the group's creation, naming the user) and 2 were held, and 3 was
  // already committed: head 3, unread 2 (2 and 3 from another member)
  const base = stored(3, 2, 0, 0);
  assert.equal(cache.of("n1", held, null, U), null, "nothing kept yet: recompute");
  cache.remember("n1", base, held, null);
  assert.deepEqual([cache.of("n1", held, null, U)?.headSeq, cache.of("n1", held, null, U)?.unread], [3, 2], "1 and 2 are in the recompute (the membership event too)");
  // 3 is handed over after the recompute read it: at or below its head, not counted twice
  held.push(entry(3));
  assert.equal(cache.of("n1", held, null, U)?.unread, 2);
  held.push(entry(4), entry(5, { sender: U }), entry(6, { mentions: U }));
  const r6 = cache.of("n1", held, null, U)!;
  assert.deepEqual([r6.headSeq, r6.unread, r6.mentions, r6.mentionFirst], [6, 4, 1, 6], "by hand: 2, 3, 4, 6 count (5 is the user's own); 6 mentions the user");
  // the user's prefs changed (a clear or a delete by any process): recompute
  assert.equal(cache.of("n1", held, "0|12|0", U), null);
  assert.equal(cache.of("n1", held, null, U)?.unread, 4, "the same prefs again: still kept");
  // another array (a take or a flush made a new window): recompute
  assert.equal(cache.of("n1", [entry(7)], null, U), null);
  // a later membership event naming the user: recompute, and nothing kept after it
  held.push(entry(7, { control: true, membership: U }));
  assert.equal(cache.of("n1", held, null, U), null);
  assert.equal(cache.of("n1", held.slice(0, -1), null, U), null, "dropped");
  // a record older than one applied (late): recompute
  const late: InHandEntry[] = [entry(10)];
  cache.remember("n2", stored(10, 1, 9, 0), late, null);
  late.push(entry(12));
  assert.equal(cache.of("n2", late, null, U)?.unread, 2);
  late.push(entry(11));
  assert.equal(cache.of("n2", late, null, U), null);
});

test("NewRowCache against liveRow from the same base: after every step of random histories the same row (or a recompute)", () => {
  let seed = 777;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (let h = 0; h < 300; h++) {
    const cache = new NewRowCache();
    const head = 5 + Math.floor(rnd() * 5);
    const base = stored(head, Math.floor(rnd() * 3), 0, 0);
    // held when the recompute read: records at or below its head
    const held: InHandEntry[] = Array.from({ length: 1 + Math.floor(rnd() * 3) }, (_, i) => entry(head - i));
    cache.remember("k", base, held, null);
    let next = head + 1;
    let dropped = false;
    for (let s = 0; s < 30 && !dropped; s++) {
      const x = rnd();
      if (x < 0.1) held.push(entry(next - 1 - Math.floor(rnd() * 3)));
      else held.push(entry(next++, { sender: x < 0.3 ? U : OTHER, mentions: x > 0.9 ? U : "" }));
      const got = cache.of("k", held, null, U);
      // the definition: liveRow from the base, over the records above its head only (the ones at or below it are counted in it)
      const want = liveRow(base, held.filter((e) => e.seq > base.headSeq), U);
      if (got === null) {
        // a recompute is always allowed; the cache keeps nothing after it
        dropped = true;
        continue;
      }
      assert.deepEqual(got, want, `history ${h} step ${s}`);
    }
  }
});
