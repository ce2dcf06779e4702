/**
 * Issue 6, load: groups above membership_event_broadcast_max_members (500), through the mTLS
 * admin API. Around the threshold a control message goes to post-change members ∪ affected, above
 * it to the affected users only (checked on each dispatch record's recipients). A 10,000-member
 * group — created with 10,000 initial members, or filled by 10 calls of 1,000 — takes adds and
 * removes of 1,000 users at once; 1,001 distinct users is INVALID_ARGUMENT(users) and changes
 * nothing; checkConversation holds; no version delta or commit record outlives the relay, and the
 * member table grows with distinct users (never with changes) at about the cost of a bare set.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { errorCode, errorField, type AdminClient } from "../../admin-api/client.js";
import { decodeHistoryEntry, uuidToHex, type DispatchRecord, type Uuid } from "../../core/index.js";
import { checkConversation } from "../core/checker.js";
import { conversationKeyList, dumpKeys } from "../harness/dump.js";
import { ALL_TOPOLOGIES, type TopologyKind } from "../harness/redis.js";
import { allMembers, rejected } from "../admin-api/helpers.js";
import { SOAK } from "./common.js";
import { startReliabilityServer, type ReliabilityServer } from "./server.js";
import { newUuid } from "../../core/index.js";
import { parseUuid } from "../../core/index.js";

const BROADCAST_MAX = 500;
const PER_CALL = 1000;
const MAX_INITIAL = 10_000;
/** Messages sent into each 10,000-member group (each dispatch record names every member). */
const BIG_MESSAGES = SOAK ? 50 : 5;
/** Full add/remove cycles of 1,000 users on the 10,000-member group. */
const BIG_CYCLES = SOAK ? 10 : 1;

/** QIM_TEST_TOPOLOGIES picks the topologies; by default one standalone instance. */
const TOPOLOGIES: TopologyKind[] = process.env.QIM_TEST_TOPOLOGIES ? ALL_TOPOLOGIES : ["single"];

const users = (n: number): Uuid[] => Array.from({ length: n }, () => newUuid());
const sorted = (xs: Iterable<Uuid>) => [...new Set(xs)].sort();

for (const kind of TOPOLOGIES) {
  describe(`issue 6 big groups on ${kind}${SOAK ? " (soak)" : ""}`, () => {
    let rs: ReliabilityServer;
    let op: AdminClient;
    let drill: AdminClient;
    before(async () => {
      rs = await startReliabilityServer(kind);
      op = rs.connect("operator", { deadlineMs: 60_000 });
      drill = rs.connect("drill", { deadlineMs: 60_000 });
    });
    after(async () => { await rs?.close(); });

    const recordsOf = async (group: Uuid): Promise<DispatchRecord[]> => {
      await rs.outboxDrained();
      return (await rs.dispatched()).map((e) => e.record).filter((r) => r.conversation === group).sort((a, b) => a.conversationSeq - b.conversationSeq);
    };
    const groupDigest = (tenant: Uuid, group: Uuid) => {
      const k = rs.server.conversations.conversationKeys(tenant, group);
      return dumpKeys(rs.store.clientFor(k.tag), conversationKeyList(k));
    };

    it("around the threshold: post-change members ∪ affected up to 500 members, only the affected above", async () => {
      const tenant = newUuid();
      const owner = newUuid();
      const initial = users(498);
      const g = await op.createGroup({ tenant, group: "", owner, members: initial });
      assert.equal(g.memberCount, 499);
      const members = new Set([owner, ...initial]);
      // [op, users, expected audience] — the audience is computed from the members after the change
      const steps: { name: string; add: boolean; who: Uuid[]; audience: () => Uuid[]; seq?: number }[] = [];
      const step = async (name: string, add: boolean, who: Uuid[]) => {
        const r = add ? await op.addMembers({ tenant, group: g.group, users: who, dryRun: false })
          : await op.removeMembers({ tenant, group: g.group, users: who, dryRun: false });
        assert.equal(r.outcome, "committed", name);
        for (const u of who) if (add) members.add(u); else members.delete(u);
        const expected = members.size <= BROADCAST_MAX ? sorted([...members, ...who]) : sorted(who);
        assert.equal(r.audienceSize, expected.length, `${name}: audience size in the answer`);
        steps.push({ name, add, who, audience: () => expected, seq: Number(r.eventConversationSeq) });
      };
      const [x, y] = users(2);
      await step("add to exactly 500", true, [x!]);
      await step("add to 501", true, [y!]);
      await step("remove to exactly 500", false, [y!]);
      await step("remove to 499", false, [x!]);
      const ten = users(10);
      await step("add 10 to 509", true, ten);
      await step("remove 3 to 506", false, ten.slice(0, 3));
      const m = await drill.sendMessage({ tenant, group: g.group, sender: owner, text: "to all 506", clientMessageId: "", mentions: [] });

      const records = await recordsOf(parseUuid(g.group, "group"));
      const report = checkConversation([owner, ...initial], records, BROADCAST_MAX);
      assert.deepEqual(report.violations, []);
      for (const s of steps) {
        const rec = records.find((r) => r.conversationSeq === s.seq)!;
        assert.deepEqual(sorted(rec.recipients), s.audience(), s.name);
      }
      assert.equal(records.find((r) => r.conversationSeq === Number(m.conversationSeq))!.recipients.length, 506, "a message goes to every member");
      console.log(`# big-group threshold: ${steps.map((s) => `${s.name}: ${s.audience().length} recipients`).join("; ")}; checkConversation over ${records.length} records: ${report.violations.length} violations`);
    });

    for (const how of ["created with 10,000 initial members", "filled by 10 calls of 1,000"] as const) {
      it(`a 10,000-member group ${how}: 1,000 users per add and remove, 1,001 refused, invariants and memory hold`, async () => {
        const tenant = newUuid();
        const owner = newUuid();
        let initial: Uuid[];
        let group: Uuid;
        let fillCalls = 0;
        if (how === "created with 10,000 initial members") {
          // the owner counts: 9,999 more members is the limit, one more is refused
          const tooMany = await rejected(op.createGroup({ tenant, group: "", owner, members: users(MAX_INITIAL) }));
          assert.equal(tooMany.code, grpc.status.INVALID_ARGUMENT);
          assert.equal(errorField(tooMany), "members");
          initial = [owner, ...users(MAX_INITIAL - 1)];
          const g = await op.createGroup({ tenant, group: "", owner, members: initial.slice(1) });
          assert.equal(g.memberCount, MAX_INITIAL);
          group = parseUuid(g.group, "group");
        } else {
          const g = await op.createGroup({ tenant, group: "", owner, members: [] });
          group = parseUuid(g.group, "group");
          initial = [owner];
          for (let i = 0; i < MAX_INITIAL / PER_CALL; i++) {
            const r = await op.addMembers({ tenant, group, users: users(PER_CALL), dryRun: false });
            assert.equal(r.outcome, "committed");
            assert.equal(r.changed.length, PER_CALL);
            // above the threshold from the first 1,000 on: only the joiners get the event
            assert.equal(r.audienceSize, PER_CALL);
            fillCalls++;
          }
        }
        let members = new Set((await allMembers(op, tenant, group)).members.filter((m) => m.state === "ACTIVE").map((m) => parseUuid(m.userId, "userId")));
        assert.ok(members.size >= MAX_INITIAL);
        const removable = () => [...members].filter((u) => u !== owner);
        const sender = removable()[0]!;
        let messages = 0;
        const send = async () => {
          await drill.sendMessage({ tenant, group, sender, text: `m${messages}`, clientMessageId: "", mentions: [] });
          messages++;
        };
        for (let i = 0; i < BIG_MESSAGES; i++) await send();

        for (let c = 0; c < BIG_CYCLES; c++) {
          const plan = await op.addMembers({ tenant, group, users: users(PER_CALL), dryRun: true });
          assert.equal(plan.outcome, "planned");
          assert.equal(plan.audienceSize, PER_CALL, "dry run: above the threshold the audience is the joiners");
          const newcomers = users(PER_CALL);
          const add = await op.addMembers({ tenant, group, users: newcomers, dryRun: false });
          assert.equal(add.outcome, "committed");
          assert.equal(add.audienceSize, PER_CALL);
          for (const u of newcomers) members.add(u);
          await send();
          // 1,001 entries naming 1,000 distinct users is within the limit (the limit counts distinct users)
          const leaving = removable().filter((u) => u !== sender).slice(0, PER_CALL);
          const rm = await op.removeMembers({ tenant, group, users: [...leaving, leaving[0]!], dryRun: false });
          assert.equal(rm.outcome, "committed");
          assert.equal(rm.changed.length, PER_CALL);
          assert.equal(rm.audienceSize, PER_CALL);
          for (const u of leaving) members.delete(u);
          await send();
        }

        // 1,001 distinct users: INVALID_ARGUMENT naming the field, nothing changed
        await rs.outboxDrained();
        const before = await groupDigest(tenant, group);
        for (const [name, call] of [
          ["add", () => op.addMembers({ tenant, group, users: users(PER_CALL + 1), dryRun: false })],
          ["remove", () => op.removeMembers({ tenant, group, users: removable().slice(0, PER_CALL + 1), dryRun: false })],
          ["add, dry run", () => op.addMembers({ tenant, group, users: users(PER_CALL + 1), dryRun: true })],
        ] as const) {
          const err = await rejected(call());
          assert.equal(err.code, grpc.status.INVALID_ARGUMENT, `${name}: ${err.details}`);
          assert.equal(errorCode(err), "INVALID_ARGUMENT");
          assert.equal(errorField(err), "users", name);
          assert.match(err.details, /users names 1001 distinct users; the limit per call is 1000/);
        }
        assert.equal(await groupDigest(tenant, group), before, "a refused call changes nothing");

        const records = await recordsOf(group);
        const report = checkConversation(initial, records, BROADCAST_MAX);
        assert.deepEqual(report.violations, []);
        assert.equal(report.messages, messages);
        const info = await op.getGroup({ tenant, group });
        assert.equal(info.memberCount, members.size);
        assert.equal(info.conversationSeq, BigInt(records.length));
        // every change happened above the threshold: each event went to the (at most 1,000) affected users only
        const events = records.filter((r) => decodeHistoryEntry(r.entry).membership);
        assert.equal(events.length, report.events);
        for (const r of events) assert.ok(r.recipients.length <= PER_CALL, `event ${r.conversationSeq}: ${r.recipients.length} recipients`);
        members = new Set((await allMembers(op, tenant, group)).members.filter((m) => m.state === "ACTIVE").map((m) => parseUuid(m.userId, "userId")));
        assert.equal(members.size, info.memberCount);

        // Bounded memory. Nothing per version survives the relay (no delta, commit record or
        // pending entry). The member table holds one entry per user who ever was a member (a
        // removed member keeps the interval their history is clipped to; a rejoin replaces it), so
        // it grows with distinct users, never with changes, and costs about what a bare SET of the
        // same users does; all of the group's keys (history with its events included) within 2×.
        const k = rs.server.conversations.conversationKeys(tenant, group);
        const client = rs.store.clientFor(k.tag);
        assert.equal(await client.exists(k.grpdeltas), 0);
        assert.equal(await client.hlen(k.commits), 0);
        assert.equal(await client.zcard(k.vpending), 0);
        const everyone = (await allMembers(op, tenant, group)).members.map((m) => parseUuid(m.userId, "userId"));
        assert.equal(await client.hlen(k.grpmembers), everyone.length);
        assert.equal(everyone.length, initial.length + (fillCalls + BIG_CYCLES) * PER_CALL, "one entry per user ever added, whatever the number of changes");
        const usage = async (key: string) => Number((await client.call("MEMORY", "USAGE", key, "SAMPLES", "0")) ?? 0);
        const tableBytes = await usage(k.grpmembers);
        let groupBytes = 0;
        for (const key of [k.grpmeta, k.grpmembers, k.grpdeltas, k.vpending, k.cseq, k.hist, k.commits, k.idem, k.readseq, k.unreadidx]) groupBytes += await usage(key);
        const bareSet = async (ids: Uuid[]) => {
          const ref = `${k.grpmeta}:reference-member-set`;
          for (let i = 0; i < ids.length; i += 1000) await client.sadd(ref, ...ids.slice(i, i + 1000).map(uuidToHex));
          const bytes = await usage(ref);
          await client.del(ref);
          return bytes;
        };
        const everyoneBytes = await bareSet(everyone);
        const currentBytes = await bareSet([...members]);
        const tableRatio = tableBytes / everyoneBytes;
        const groupRatio = groupBytes / everyoneBytes;
        assert.ok(tableRatio <= 1.5, `the member table takes ${tableBytes} B, ${tableRatio.toFixed(2)}× a bare set of its ${everyone.length} users (${everyoneBytes} B)`);
        assert.ok(groupRatio <= 2, `the group's keys take ${groupBytes} B, ${groupRatio.toFixed(2)}× a bare set of its ${everyone.length} users (${everyoneBytes} B)`);
        console.log(`# big-group ${how}${SOAK ? " (soak)" : ""}: ${fillCalls ? `${fillCalls} fill calls, ` : ""}${BIG_CYCLES} × (add 1,000 + remove 1,000), ${messages} messages, `
          + `3 calls of 1,001 refused INVALID_ARGUMENT(users) with no change; ${members.size} members, ${everyone.length} member-table entries; `
          + `checkConversation over ${records.length} records (${report.events} events): ${report.violations.length} violations; no delta/commit/pending left; `
          + `member table ${tableBytes} B = ${tableRatio.toFixed(2)}× a bare set of its users (${(tableBytes / currentBytes).toFixed(2)}× one of the current members), `
          + `all group keys ${groupBytes} B = ${groupRatio.toFixed(2)}×`);
      });
    }
  });
}
