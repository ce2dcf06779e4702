/**
 * Seeded property test of the conversation-list engine (issue 12): random sends (with mentions),
 * reads from two devices (one often behind the other), joins, removals and leaves, clears,
 * deletes, mutes, archives and pins, on real Redis. After every step every row's cached unread and
 * mentions equal the definitional values of spec 002 §3.1 computed HERE from the history this
 * test generated (never from the engine), and the badge equals its sums (§4) over that model.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { newUuid, type Uuid } from "../../../core/index.js";
import { LIST_TOPOLOGIES, useList } from "./fixture.js";
import { mulberry32 } from "../../harness/random.js";

const SEED = Number(process.env.QIM_PROPERTY_SEED ?? 20261201);
const STEPS = Number(process.env.QIM_PROPERTY_STEPS ?? 160);


interface Msg { seq: number; sender: Uuid; normal: boolean; mentions: Set<Uuid> }
interface Member { joinedAt: number; leftAt: number | null; state: "ACTIVE" | "LEFT" | "REMOVED" }
interface UserView { read: number; hidden: number; deleted: number; deletedSet: boolean; muted: boolean; archived: boolean; pinned: boolean; touched: boolean }

class Model {
  readonly history = new Map<Uuid, Msg[]>();
  readonly members = new Map<Uuid, Map<Uuid, Member>>();
  readonly views = new Map<string, UserView>();

  view(g: Uuid, u: Uuid): UserView {
    const id = `${g}|${u}`;
    let v = this.views.get(id);
    if (!v) {
      v = { read: 0, hidden: 0, deleted: 0, deletedSet: false, muted: false, archived: false, pinned: false, touched: false };
      this.views.set(id, v);
    }
    return v;
  }

  /** The newest seq u may see (joined_at < seq < left_at); 0 when none. */
  visibleHead(g: Uuid, u: Uuid): number {
    const m = this.members.get(g)!.get(u)!;
    let head = 0;
    for (const msg of this.history.get(g)!) if (msg.seq > m.joinedAt && (m.leftAt === null || msg.seq < m.leftAt)) head = Math.max(head, msg.seq);
    return head;
  }

  /**
   * spec 002 §3.1, with its base; mentions over the same set. §3.3: when latest − base exceeds
   * unread_precise_limit (200), unread is 200 and inexact, and mentions count over the newest 200 seqs.
   */
  definitional(g: Uuid, u: Uuid): { unread: number; exact: boolean; mentions: number; mentionFirst: number | null; head: number } {
    const m = this.members.get(g)!.get(u)!;
    const v = this.view(g, u);
    const base = Math.max(v.read, v.hidden, m.joinedAt, v.deleted);
    const head = this.visibleHead(g, u);
    const exact = head - base <= 200;
    const from = exact ? base : head - 200;
    let unread = 0;
    let mentions = 0;
    let mentionFirst: number | null = null;
    for (const msg of this.history.get(g)!) {
      if (msg.seq <= base || msg.seq > head || msg.sender === u || !msg.normal) continue;
      unread++;
      if (msg.seq <= from) continue;
      if (msg.mentions.has(u)) {
        mentions++;
        mentionFirst ??= msg.seq;
      }
    }
    return { unread: exact ? unread : 200, exact, mentions, mentionFirst, head };
  }

  /** The head an action uses (clear/delete): the visible head, or joined_at when there is none. */
  actionHead(g: Uuid, u: Uuid): number {
    return this.visibleHead(g, u) || this.members.get(g)!.get(u)!.joinedAt;
  }
}

for (const kind of LIST_TOPOLOGIES) {
  describe(`on ${kind}`, () => {
    const fx = useList(kind);

    test(`property: seeded random history (seed ${SEED}, ${STEPS} steps) — cache = definition, badge = sums after every step`, async () => {
      const rnd = mulberry32(SEED);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
      const tenant = fx.tenant();
      const c = fx.engine.conversations;
      const list = fx.engine.conversationList.service;
      const users = Array.from({ length: 5 }, () => newUuid());
      const model = new Model();
      const groups: Uuid[] = [];
      for (let i = 0; i < 3; i++) {
        const owner = users[i]!;
        const initial = users.filter((u, j) => u === owner || rnd() < 0.6 || j === (i + 1) % users.length);
        const { group } = await c.createGroup({ tenant, owner, members: initial });
        groups.push(group);
        model.history.set(group, []);
        model.members.set(group, new Map(initial.map((u) => [u, { joinedAt: 0, leftAt: null, state: "ACTIVE" as const }])));
      }
      const ownerOf = (g: Uuid) => users[groups.indexOf(g)]!;
      const active = (g: Uuid) => [...model.members.get(g)!].filter(([, m]) => m.state === "ACTIVE").map(([u]) => u);
      const everMember = (g: Uuid) => [...model.members.get(g)!.keys()];
      const deliver = (g: Uuid, audience: Iterable<Uuid>) => { for (const u of audience) model.view(g, u).touched = true; };
      const counts: Record<string, number> = {};

      const send = async (g: Uuid) => {
        const sender = pick(active(g));
        const mentions = new Set(active(g).filter(() => rnd() < 0.3));
        const r = await c.send({ tenant, group: g, sender, text: "m", mentions: [...mentions] });
        model.history.get(g)!.push({ seq: r.conversationSeq, sender, normal: true, mentions });
        deliver(g, active(g));
      };

      for (let step = 0; step < STEPS; step++) {
        const g = pick(groups);
        const roll = rnd();
        let kind: string;
        if (roll < 0.35) {
          kind = "send";
          const n = 1 + Math.floor(rnd() * 3);
          for (let i = 0; i < n; i++) await send(g);
          // sometimes a read in the same window, with the records still in hand (§3.2 (a))
          if (rnd() < 0.4) {
            await fx.deliver();
            const u = pick(active(g));
            const head = model.visibleHead(g, u);
            const seq = Math.floor(rnd() * (head + 1));
            await c.markRead({ tenant, group: g, user: u, seq });
            model.view(g, u).read = Math.max(model.view(g, u).read, Math.min(seq, head));
            model.view(g, u).touched = true;
            kind = "send+read";
          }
        } else if (roll < 0.55) {
          // two devices: one reads to the head, the other to an older position (forward only wins)
          kind = "read2";
          const u = pick(everMember(g));
          const head = model.visibleHead(g, u);
          const older = Math.floor(rnd() * (head + 1));
          const first = rnd() < 0.5 ? head : older;
          const second = first === head ? older : head;
          for (const seq of rnd() < 0.5 ? [first] : [first, second]) {
            await c.markRead({ tenant, group: g, user: u, seq });
            model.view(g, u).read = Math.max(model.view(g, u).read, Math.min(seq, head));
          }
          model.view(g, u).touched = true;
        } else if (roll < 0.67) {
          const members = model.members.get(g)!;
          const outside = users.filter((u) => members.get(u)?.state !== "ACTIVE");
          const removable = active(g).filter((u) => u !== ownerOf(g));
          if (outside.length > 0 && (removable.length === 0 || rnd() < 0.5)) {
            kind = "join";
            const u = pick(outside);
            const r = await c.addMembers({ tenant, group: g, users: [u] });
            const seq = r.eventConversationSeq!;
            members.set(u, { joinedAt: seq - 1, leftAt: null, state: "ACTIVE" });
            model.history.get(g)!.push({ seq, sender: ownerOf(g), normal: false, mentions: new Set() });
            deliver(g, active(g));
          } else if (removable.length > 0) {
            const u = pick(removable);
            const leave = rnd() < 0.5;
            kind = leave ? "leave" : "remove";
            const audience = active(g);
            const r = leave ? await c.leaveGroup({ tenant, group: g, user: u }) : await c.removeMembers({ tenant, group: g, users: [u] });
            const seq = r.eventConversationSeq!;
            members.set(u, { ...members.get(u)!, leftAt: seq, state: leave ? "LEFT" : "REMOVED" });
            model.history.get(g)!.push({ seq, sender: leave ? u : ownerOf(g), normal: false, mentions: new Set() });
            deliver(g, audience);
          } else {
            kind = "send";
            await send(g);
          }
        } else {
          const u = pick(everMember(g));
          const v = model.view(g, u);
          const action = pick(["clear", "delete", "mute", "unmute", "archive", "unarchive", "pin", "unpin"] as const);
          kind = action;
          await list[action](tenant, u, g);
          v.touched = true;
          if (action === "clear") v.hidden = Math.max(v.hidden, model.actionHead(g, u));
          if (action === "delete") {
            // §7: deleted_before = head.latest, 0 before any message (and then in force all the same)
            v.deleted = Math.max(v.deleted, model.actionHead(g, u));
            v.deletedSet = true;
          }
          if (action === "mute" || action === "unmute") v.muted = action === "mute";
          if (action === "archive" || action === "unarchive") v.archived = action === "archive";
          if (action === "pin" || action === "unpin") v.pinned = action === "pin";
        }
        counts[kind] = (counts[kind] ?? 0) + 1;
        await fx.settle();

        for (const u of users) {
          const rows = new Map((await list.rows(tenant, u)).map((r) => [r.conversation, r]));
          let totalUnread = 0;
          let totalMention = 0;
          let mutedUnread = 0;
          for (const g2 of groups) {
            const m = model.members.get(g2)!.get(u);
            const v = model.views.get(`${g2}|${u}`);
            const row = rows.get(g2);
            const where = `step ${step} (${kind}) user ${users.indexOf(u)} group ${groups.indexOf(g2)}`;
            if (!m || !v?.touched) {
              assert.equal(row, undefined, `${where}: no row expected`);
              continue;
            }
            const def = model.definitional(g2, u);
            const deleted = v.deletedSet && v.deleted >= def.head;
            if (deleted) {
              assert.equal(row, undefined, `${where}: deleted (deleted_before ${v.deleted} >= head ${def.head}) leaves the list`);
              continue;
            }
            assert.ok(row, `${where}: row expected`);
            assert.deepEqual(
              { unread: row.unread, exact: row.unreadExact, mentions: row.mentions, mentionFirst: row.mentionFirstSeq, head: row.lastActivitySeq, membership: row.membership },
              { unread: def.unread, exact: def.exact, mentions: def.mentions, mentionFirst: def.mentionFirst, head: def.head, membership: m.state },
              where,
            );
            assert.deepEqual({ muted: row.muted, archived: row.archived, pinned: row.pinRank !== null, hidden: row.hiddenBeforeSeq, deleted: row.deletedBeforeSeq },
              { muted: v.muted, archived: v.archived, pinned: v.pinned, hidden: v.hidden, deleted: v.deleted }, where);
            if (m.state === "ACTIVE" && !v.archived && !v.muted) totalUnread += def.unread;
            if (m.state === "ACTIVE") totalMention += def.mentions;
            if (v.muted) mutedUnread += def.unread;
          }
          const badge = await list.badge(tenant, u);
          assert.deepEqual({ totalUnread: badge.totalUnread, totalMention: badge.totalMention, mutedUnread: badge.mutedUnread },
            { totalUnread, totalMention, mutedUnread }, `step ${step} (${kind}) badge of user ${users.indexOf(u)}`);
        }
      }
      // the run exercised every kind of step
      for (const k of ["send", "send+read", "read2", "join", "clear", "delete", "mute", "archive"]) assert.ok((counts[k] ?? 0) > 0, `${k} never ran: ${JSON.stringify(counts)}`);
      assert.ok((counts.leave ?? 0) + (counts.remove ?? 0) > 0, JSON.stringify(counts));
    });
  });
}
