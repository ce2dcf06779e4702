import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { PermissionDeniedError, type ConversationService, type Uuid } from "../../core/index.js";
import { ACCEPTANCE_TOPOLOGIES } from "../harness/redis.js";
import { checkConversation } from "./checker.js";
import { useEngine, type EngineFixture } from "./fixture.js";
import { newUuid } from "../../core/index.js";

/** A scripted history: the same operations on a fresh tenant always give the same state. */
async function scenario(fx: EngineFixture, engine: ConversationService, tenant: Uuid, users: { O: Uuid; A: Uuid; B: Uuid }) {
  const { O, A, B } = users;
  const g = await engine.createGroup({ tenant, owner: O, members: [A] });
  const group = g.group;
  const seq: Record<string, number> = {};
  const send = async (name: string, sender: Uuid) => { seq[name] = (await engine.send({ tenant, group, sender, text: name })).conversationSeq; };
  await send("m1", A);
  await send("m2", O);
  seq.joinB = (await engine.addMembers({ tenant, group, users: [B] })).eventConversationSeq!;
  await send("m3", B);
  await send("m4", A);
  seq.removeA = (await engine.removeMembers({ tenant, group, users: [A] })).eventConversationSeq!;
  await send("m5", O);
  await send("m6", B);
  await fx.relay.drainAll();
  return { group, seq, initial: [O, A] };
}

for (const kind of ACCEPTANCE_TOPOLOGIES) {
  describe(`ADR-0021 acceptance 1–3 on ${kind}`, () => {
    const fx = useEngine(kind, { now: (() => { let t = 1_700_000_000_000; return () => ++t; })() });
    const users = { O: newUuid(), A: newUuid(), B: newUuid() };

    it("1. join boundary: audience, history and unread of the joiner start at the join event", async () => {
      const tenant = fx.tenant();
      const { group, seq, initial } = await scenario(fx, fx.engine, tenant, users);
      const records = (await fx.dispatched()).map((e) => e.record).filter((r) => r.conversation === group);
      const report = checkConversation(initial, records);
      assert.deepEqual(report.violations, []);
      for (const r of records) {
        assert.equal(r.recipients.includes(users.B), r.conversationSeq >= seq.joinB!, `B in audience of seq ${r.conversationSeq}`);
      }
      const h = await fx.engine.history({ tenant, group, user: users.B });
      assert.equal(h.joinedAt, seq.joinB! - 1);
      assert.equal(h.earliestAvailableConversationSeq, seq.joinB);
      assert.equal(h.records[0]!.conversationSeq, seq.joinB);
      assert.equal(h.records[0]!.membership?.op, 1);
      assert.ok(h.records.every((r) => r.conversationSeq >= seq.joinB!));
      const s = await fx.engine.conversationSummary({ tenant, group, user: users.B });
      // visible and not B's own: m4, m5 (m3 is B's, m6 is B's, the control messages never count)
      assert.equal(s.unread, 2);
      assert.equal(s.unreadExact, true);
    });

    it("2. leave boundary: nothing at or after left_at reaches, shows to, or heads the session of the removed user", async () => {
      const tenant = fx.tenant();
      const { group, seq } = await scenario(fx, fx.engine, tenant, users);
      const records = (await fx.dispatched()).map((e) => e.record).filter((r) => r.conversation === group);
      for (const r of records) {
        const isOwnRemoval = r.conversationSeq === seq.removeA;
        if (r.conversationSeq >= seq.removeA! && !isOwnRemoval) assert.ok(!r.recipients.includes(users.A), `A must not receive seq ${r.conversationSeq}`);
      }
      // the affected user always receives their own removal event (ADR-0021 §2), though it is
      // outside their visible interval
      assert.ok(records.find((r) => r.conversationSeq === seq.removeA)!.recipients.includes(users.A));
      const h = await fx.engine.history({ tenant, group, user: users.A });
      assert.equal(h.leftAt, seq.removeA);
      assert.equal(h.state, "REMOVED");
      assert.deepEqual(h.records.map((r) => r.conversationSeq), [seq.m1, seq.m2, seq.joinB, seq.m3, seq.m4]);
      const s = await fx.engine.conversationSummary({ tenant, group, user: users.A });
      assert.equal(s.head!.conversationSeq, seq.m4);
      assert.ok(s.head!.conversationSeq < seq.removeA!);
      // base 0: m2 (O) and m3 (B) count; m1, m4 are A's own; nothing after left_at
      assert.equal(s.unread, 2);
      await assert.rejects(fx.engine.listMembers({ tenant, group, asUser: users.A }), PermissionDeniedError);
      await assert.rejects(fx.engine.send({ tenant, group, sender: users.A, text: "after" }), PermissionDeniedError);
    });

    it("2. replay: the same operations give identical state", async () => {
      const normalise = async (tenant: Uuid) => {
        const { group } = await scenario(fx, fx.engine, tenant, users);
        const views = [];
        for (const user of Object.values(users)) {
          const h = await fx.engine.history({ tenant, group, user });
          const s = await fx.engine.conversationSummary({ tenant, group, user });
          views.push({
            h: { ...h, records: h.records.map(({ messageId: _m, createdAt: _c, ...rest }) => ({ ...rest, payload: Buffer.from(rest.payload).toString("hex") })) },
            s: { unread: s.unread, head: s.head?.conversationSeq, leftAt: s.leftAt, joinedAt: s.joinedAt, state: s.state },
          });
        }
        const members = (await fx.engine.listMembers({ tenant, group })).members;
        const audiences = (await fx.dispatched()).map((e) => e.record).filter((r) => r.conversation === group)
          .sort((a, b) => a.conversationSeq - b.conversationSeq).map((r) => [r.conversationSeq, r.version, [...r.recipients].sort()]);
        return { views, members, audiences };
      };
      assert.deepEqual(await normalise(fx.tenant()), await normalise(fx.tenant()));
    });

    it("3. rejoin: the new interval replaces the old; what came between stays invisible", async () => {
      const tenant = fx.tenant();
      const { group, seq } = await scenario(fx, fx.engine, tenant, users);
      const rejoin = await fx.engine.addMembers({ tenant, group, users: [users.A] });
      assert.equal(rejoin.outcome, "committed");
      const m7 = await fx.engine.send({ tenant, group, sender: users.B, text: "m7" });
      const h = await fx.engine.history({ tenant, group, user: users.A });
      assert.equal(h.joinedAt, rejoin.eventConversationSeq! - 1);
      assert.equal(h.leftAt, null);
      assert.equal(h.state, "ACTIVE");
      assert.equal(h.earliestAvailableConversationSeq, rejoin.eventConversationSeq);
      assert.deepEqual(h.records.map((r) => r.conversationSeq), [rejoin.eventConversationSeq, m7.conversationSeq]);
      for (const between of [seq.removeA, seq.m5, seq.m6, seq.m1]) {
        assert.ok(!h.records.some((r) => r.conversationSeq === between), `seq ${between} must be invisible after the rejoin`);
      }
      const s = await fx.engine.conversationSummary({ tenant, group, user: users.A });
      assert.equal(s.unread, 1);
      await fx.relay.drainAll();
      const records = (await fx.dispatched()).map((e) => e.record).filter((r) => r.conversation === group);
      assert.ok(records.find((r) => r.conversationSeq === m7.conversationSeq)!.recipients.includes(users.A));
      assert.ok(!records.find((r) => r.conversationSeq === seq.m6)!.recipients.includes(users.A));
    });

    it("a user who never was a member is refused exactly as for a group that does not exist", async () => {
      const tenant = fx.tenant();
      const { group } = await scenario(fx, fx.engine, tenant, users);
      const stranger = newUuid();
      const a = await fx.engine.history({ tenant, group, user: stranger }).catch((e: Error) => e);
      const b = await fx.engine.history({ tenant, group: newUuid(), user: stranger }).catch((e: Error) => e);
      assert.ok(a instanceof PermissionDeniedError && b instanceof PermissionDeniedError);
      assert.equal(a.message, b.message);
      await assert.rejects(fx.engine.conversationSummary({ tenant, group, user: stranger }), PermissionDeniedError);
    });
  });
}
