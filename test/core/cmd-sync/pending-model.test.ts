/**
 * The pending buffer against an independent model, over a seeded random history of intents
 * (replays and old ones included), markSynced calls and flushes: after every step each user's
 * listPending equals what the model derives from the raw history (per (channel, user) the max
 * read, last seq and active time since the entry was last removed; an intent no newer in all three
 * than what the last removal settled — a flush's values, or an ack's read seq — makes no entry:
 * the whole run takes far less than CMD_SETTLED_MEMORY_MS), and after each flush every
 * durable row equals the max over everything flushed for it (the model's own max, not the code's).
 */
import { it } from "node:test";
import assert from "node:assert/strict";
import { CmdPendingUpdater, newUuid, slotOfUser, type Uuid } from "../../../core/index.js";
import { SOLO, useCmdRedis } from "./fixture.js";
import { mulberry32 } from "../../harness/random.js";

const fx = useCmdRedis("single");


interface M { read: number; last: number; active: number }

it("random history (seed 20261201): listPending and the durable rows equal the model's", async () => {
  const rnd = mulberry32(20261201);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const { states } = fx.fresh();
  const tenant = newUuid();
  const users: Uuid[] = Array.from({ length: 6 }, () => newUuid());
  const channels = [["a____cmd", 2], ["a____cmd", 1], ["b____cmd", 2], ["c____cmd", 2]] as const;
  const pending = new CmdPendingUpdater({ store: states, dataDir: null, slotOf: slotOfUser, fenceOf: () => SOLO, flushIntervalMs: 0, flushBatchSize: 3, log: () => {} });
  const model = new Map<string, M>();
  /** What the last removal of each (user, channel) settled. */
  const settled = new Map<string, M>();
  const durable = new Map<string, M>();
  const key = (u: Uuid, c: readonly [string, number]) => `${u}|${c[1]}|${c[0]}`;
  const seqs = new Map<string, number>();

  for (let step = 0; step < 600; step++) {
    const r = rnd();
    if (r < 0.7) {
      const c = pick(channels);
      const ck = `${c[1]}|${c[0]}`;
      // a new seq most of the time, else a replay of an older one
      const top = seqs.get(ck) ?? 0;
      const seq = rnd() < 0.8 || top === 0 ? top + 1 : 1 + Math.floor(rnd() * top);
      seqs.set(ck, Math.max(top, seq));
      const active = 1000 + seq * 10;
      const who = users.filter(() => rnd() < 0.4);
      if (who.length === 0) continue;
      const sender = rnd() < 0.5 ? pick(who) : null;
      const map = new Map(who.map((u) => [u, u === sender ? seq : 0] as [Uuid, number]));
      assert.equal(pending.pushIntent({ tenant, channel: { channelId: c[0], channelType: c[1] }, messageSeq: seq, activeAt: active, userReadSeqs: map }), true);
      for (const [u, read] of map) {
        const k = key(u, c);
        const m = model.get(k);
        const done = settled.get(k);
        if (!m && done && read <= done.read && seq <= done.last && active <= done.active) continue;
        model.set(k, m ? { read: Math.max(m.read, read), last: Math.max(m.last, seq), active: Math.max(m.active, active) } : { read, last: seq, active });
      }
    } else if (r < 0.9) {
      const u = pick(users);
      const c = pick(channels);
      const through = Math.floor(rnd() * ((seqs.get(`${c[1]}|${c[0]}`) ?? 0) + 2));
      pending.markSynced(tenant, u, { channelId: c[0], channelType: c[1] }, through);
      const m = model.get(key(u, c));
      if (m && through >= m.last) {
        model.delete(key(u, c));
        settled.set(key(u, c), { read: Math.max(m.read, through), last: m.last, active: m.active });
      }
    } else {
      await pending.flush();
      for (const [k, m] of model) {
        const d = durable.get(k);
        durable.set(k, d ? { read: Math.max(d.read, m.read), last: 0, active: Math.max(d.active, m.active) } : { read: m.read, last: 0, active: m.active });
      }
      for (const [k, m] of model) settled.set(k, m);
      model.clear();
      for (const u of users) {
        for (const c of channels) {
          const want = durable.get(key(u, c));
          const got = await states.get(tenant, u, { channelId: c[0], channelType: c[1] });
          assert.deepEqual(got && { read: got.readSeq, active: got.activeAt }, want ? { read: want.read, active: want.active } : null, `step ${step} ${key(u, c)}`);
        }
      }
    }
    for (const u of users) {
      const want = channels
        .filter((c) => model.has(key(u, c)))
        .map((c) => ({ c, m: model.get(key(u, c))! }))
        .sort((x, y) => y.m.active - x.m.active || x.c[1] - y.c[1] || (x.c[0] < y.c[0] ? -1 : x.c[0] > y.c[0] ? 1 : 0))
        .map(({ c, m }) => ({ channel: { channelId: c[0], channelType: c[1] }, lastMsgSeq: m.last, activeAt: m.active, readSeq: m.read }));
      assert.deepEqual(pending.listPending(tenant, u, 0), want, `step ${step} user ${u}`);
    }
    assert.equal(pending.size(), model.size);
  }
});
