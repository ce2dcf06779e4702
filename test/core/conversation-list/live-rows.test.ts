/**
 * LiveRowCache (row.ts): the live row of a watched user moved record by record between stored
 * writes, instead of liveRow over every held record at every hand-off. A hand-worked case, then
 * the cache against liveRow — the definition — after every step of random histories with late
 * records, own messages, mentions, the user's own membership change and stored writes.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeRow, liveRow, LiveRowCache, type InHandEntry, type RowState } from "../../../core/index.js";

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
