/**
 * Issue 6, load: the membership/history invariants under sustained load THROUGH THE ADMIN API.
 * Senders (drill role) and membership clients (operator role) on connections of their own work on
 * several groups at once for a fixed count of operations; membership rounds are either an identical
 * change sent by two clients at the same time (exactly one event, the other answer "duplicate" with
 * the same seq) or a burst of different changes racing on one group. Afterwards the relay is drained
 * and every group's dispatch records are replayed by checkConversation: audience = members at seq,
 * no duplicate, no seq gap, version +1 per event.
 *
 * CI: a few thousand operations. QIM_SOAK=1: ten times as many.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { errorCode, type AdminClient, type MembershipChange } from "../../admin-api/client.js";
import { registry, type Uuid } from "../../core/index.js";
import { checkConversation } from "../core/checker.js";
import { ALL_TOPOLOGIES, type TopologyKind } from "../harness/redis.js";
import { allMembers } from "../admin-api/helpers.js";
import { SOAK } from "./common.js";
import { startReliabilityServer, type ReliabilityServer } from "./server.js";
import { newUuid } from "../../core/index.js";
import { parseUuid } from "../../core/index.js";

const SCALE = SOAK ? 10 : 1;
const GROUPS = 4;
const SENDERS_PER_GROUP = 3;
const MESSAGES_PER_SENDER = 125 * SCALE;
const ROUNDS_PER_GROUP = 40 * SCALE;
const MEMBERSHIP_CLIENTS = 4;
const SENDER_CLIENTS = 3;
/** Users each group's membership rounds work on (none of them a sender or the owner). */
const POOL = 24;

/** QIM_TEST_TOPOLOGIES picks the topologies; by default one with several instances (3 standalone). */
const TOPOLOGIES: TopologyKind[] = process.env.QIM_TEST_TOPOLOGIES ? ALL_TOPOLOGIES : ["multi"];

interface GroupRun {
  group: Uuid;
  owner: Uuid;
  senders: Uuid[];
  initial: Uuid[];
  pool: Uuid[];
  /** The members the test knows of (owner and senders are never removed). */
  active: Set<Uuid>;
  sentIds: Set<string>;
  committed: number;
  duplicatePairs: number;
  races: number;
  noops: number;
  refused: number;
  membershipCalls: number;
  sendCalls: number;
  sendRetries: number;
}

async function counterValue(name: string, labels: Record<string, string>): Promise<number> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  const v = m?.values.find((x) => Object.entries(labels).every(([k, l]) => x.labels[k] === l));
  return Number(v?.value ?? 0);
}

const isAborted = (e: unknown) => (e as grpc.ServiceError).code === grpc.status.ABORTED && errorCode(e) === "MEMBERSHIP_CHANGED";

for (const kind of TOPOLOGIES) {
  describe(`issue 6 load on ${kind}: senders and admin clients through the mTLS admin API${SOAK ? " (soak)" : ""}`, () => {
    let rs: ReliabilityServer;
    before(async () => { rs = await startReliabilityServer(kind); });
    after(async () => { await rs?.close(); });

    it(`${GROUPS} groups × (${SENDERS_PER_GROUP} senders × ${MESSAGES_PER_SENDER} messages + ${ROUNDS_PER_GROUP} membership rounds): zero violations`, async () => {
      const tenant = newUuid();
      // the server runs in this process: its metrics say how often a send re-froze the audience
      const refreezesBefore = await counterValue("qim_writer_membership_retry_total", { path: "send" });
      const admins = Array.from({ length: MEMBERSHIP_CLIENTS }, () => rs.connect("operator"));
      const senderClients = Array.from({ length: SENDER_CLIENTS }, () => rs.connect("drill"));
      const runs: GroupRun[] = [];
      for (let g = 0; g < GROUPS; g++) {
        const owner = newUuid();
        const senders = Array.from({ length: SENDERS_PER_GROUP }, () => newUuid());
        const pool = Array.from({ length: POOL }, () => newUuid());
        const initialPool = pool.slice(0, POOL / 2);
        const created = await admins[g % MEMBERSHIP_CLIENTS]!.createGroup({ tenant, group: "", owner, members: [...senders, ...initialPool] });
        runs.push({
          group: parseUuid(created.group, "group"), owner, senders, pool, initial: [owner, ...senders, ...initialPool], active: new Set([owner, ...senders, ...initialPool]),
          sentIds: new Set(), committed: 0, duplicatePairs: 0, races: 0, noops: 0, refused: 0, membershipCalls: 0, sendCalls: 0, sendRetries: 0,
        });
      }

      // a sender whose send was refused after the bounded re-freezes sends again with the same
      // client_message_id, as an SDK does
      const sendLoop = async (run: GroupRun, s: number) => {
        const client = senderClients[s % SENDER_CLIENTS]!;
        const sender = run.senders[s]!;
        for (let i = 0; i < MESSAGES_PER_SENDER; i++) {
          const clientMessageId = newUuid();
          for (;;) {
            run.sendCalls++;
            try {
              const r = await client.sendMessage({ tenant, group: run.group, sender, text: `${s}-${i}`, clientMessageId, mentions: [] });
              assert.equal(r.duplicate, false, "a first send of a client_message_id is never a duplicate");
              run.sentIds.add(clientMessageId);
              break;
            } catch (e) {
              if (!isAborted(e)) throw e;
              run.sendRetries++;
            }
          }
        }
      };

      const change = async (client: AdminClient, run: GroupRun, op: "add" | "remove", users: Uuid[]): Promise<MembershipChange | null> => {
        run.membershipCalls++;
        try {
          const req = { tenant, group: run.group, users, dryRun: false };
          const r = op === "add" ? await client.addMembers(req) : await client.removeMembers(req);
          for (const u of users) if (op === "add") run.active.add(u); else run.active.delete(u);
          if (r.outcome === "committed") run.committed++;
          if (r.outcome === "noop") run.noops++;
          return r;
        } catch (e) {
          if (!isAborted(e)) throw e;
          run.refused++;
          return null;
        }
      };

      // Membership rounds of one group run one after another; the groups' rounds, the senders and
      // the other groups run concurrently. Pool slices: [0, 4) for the identical pairs, then one
      // slice per burst participant, the last user shared by every racer.
      const membershipLoop = async (run: GroupRun, g: number) => {
        const pairUsers = run.pool.slice(0, 4);
        const slices = Array.from({ length: MEMBERSHIP_CLIENTS }, (_, w) => run.pool.slice(4 + w * 4, 8 + w * 4));
        const shared = run.pool[POOL - 1]!;
        for (let round = 0; round < ROUNDS_PER_GROUP; round++) {
          if (round % 2 === 0) {
            // the same change from two clients at once: exactly one event
            const r = round / 2;
            const users = Array.from({ length: 1 + (r % 3) }, (_, j) => pairUsers[(r + j) % pairUsers.length]!);
            const op = users.every((u) => run.active.has(u)) ? "remove" : "add";
            const a = admins[(g + round) % MEMBERSHIP_CLIENTS]!;
            const b = admins[(g + round + 1) % MEMBERSHIP_CLIENTS]!;
            const [ra, rb] = await Promise.all([change(a, run, op, users), change(b, run, op, users)]);
            assert.ok(ra && rb, "no other membership change runs on this group during a pair: neither is refused");
            const outcomes = [ra.outcome, rb.outcome].sort();
            assert.deepEqual(outcomes, ["committed", "duplicate"], `identical ${op} of ${users.length} user(s) sent twice at once`);
            assert.equal(ra.eventConversationSeq, rb.eventConversationSeq, "the duplicate names the same event");
            assert.equal(ra.idempotencyId, rb.idempotencyId);
            assert.equal(ra.messageId, rb.messageId);
            run.duplicatePairs++;
          } else {
            // a burst: each participant toggles a user of its own, and every other burst also
            // races all participants over the one shared user (at most one of them commits)
            const participants = 2 + (round % (MEMBERSHIP_CLIENTS - 1));
            const calls: Promise<MembershipChange | null>[] = [];
            for (let w = 0; w < participants; w++) {
              const u = slices[w]![Math.floor(round / 2) % 4]!;
              calls.push(change(admins[(g + w) % MEMBERSHIP_CLIENTS]!, run, run.active.has(u) ? "remove" : "add", [u]));
            }
            const racing = round % 4 === 1;
            const raceOp = run.active.has(shared) ? "remove" : "add";
            const raceCalls = racing ? Array.from({ length: participants }, (_, w) => change(admins[(g + w + 1) % MEMBERSHIP_CLIENTS]!, run, raceOp, [shared])) : [];
            await Promise.all(calls);
            const race = await Promise.all(raceCalls);
            if (racing) {
              run.races++;
              const done = race.filter((r): r is MembershipChange => r !== null);
              const commits = done.filter((r) => r.outcome === "committed");
              assert.ok(commits.length <= 1, `identical ${raceOp} of one user by ${participants} clients committed ${commits.length} times`);
              for (const d of done.filter((r) => r.outcome === "duplicate")) {
                if (commits[0]) assert.equal(d.eventConversationSeq, commits[0].eventConversationSeq);
              }
            }
          }
        }
      };

      await Promise.all([
        ...runs.flatMap((run) => run.senders.map((_, s) => sendLoop(run, s))),
        ...runs.map((run, g) => membershipLoop(run, g)),
      ]);
      await rs.outboxDrained();

      const all = (await rs.dispatched()).map((e) => e.record);
      let checkedRecords = 0;
      let violations = 0;
      const totals = { messages: 0, events: 0, sendCalls: 0, sendRetries: 0, membershipCalls: 0, refused: 0, noops: 0, pairs: 0, races: 0 };
      for (const run of runs) {
        const records = all.filter((r) => r.conversation === run.group);
        const report = checkConversation(run.initial, records);
        assert.deepEqual(report.violations, [], `group ${run.group}`);
        violations += report.violations.length;
        checkedRecords += records.length;
        assert.equal(report.messages, run.sentIds.size, "every sent message dispatched once");
        assert.equal(report.events, run.committed, "one event per committed change, none for a duplicate");
        const info = await admins[0]!.getGroup({ tenant, group: run.group });
        assert.equal(info.conversationSeq, BigInt(report.messages + report.events), "no gap: every allocated seq is a dispatched record");
        assert.equal(info.version, BigInt(1 + report.events));
        const members = await allMembers(admins[0]!, tenant, run.group);
        assert.deepEqual(members.members.filter((m) => m.state === "ACTIVE").map((m) => m.userId).sort(), [...run.active].sort());
        totals.messages += report.messages;
        totals.events += report.events;
        totals.sendCalls += run.sendCalls;
        totals.sendRetries += run.sendRetries;
        totals.membershipCalls += run.membershipCalls;
        totals.refused += run.refused;
        totals.noops += run.noops;
        totals.pairs += run.duplicatePairs;
        totals.races += run.races;
      }
      assert.ok(totals.pairs >= GROUPS * ROUNDS_PER_GROUP / 2);
      const refreezes = (await counterValue("qim_writer_membership_retry_total", { path: "send" })) - refreezesBefore;
      assert.equal(rs.log.filter((l) => / failed: /.test(l)).length, 0, `server log: ${rs.log.filter((l) => / failed: /.test(l)).join("\n")}`);
      console.log(`# load ${kind}${SOAK ? " soak" : ""}: ${totals.sendCalls + totals.membershipCalls} admin API calls (${totals.sendCalls} SendMessage incl. ${totals.sendRetries} resends after ABORTED, ${refreezes} audience re-freezes, `
        + `${totals.membershipCalls} Add/RemoveMembers on ${MEMBERSHIP_CLIENTS} operator connections: ${totals.events} committed, ${totals.pairs} identical pairs -> 1 event + 1 duplicate each, `
        + `${totals.races} shared-user races, ${totals.noops} noops, ${totals.refused} ABORTED after re-plans) on ${GROUPS} groups; `
        + `checkConversation over ${checkedRecords} dispatch records (${totals.messages} messages, ${totals.events} events): ${violations} violations`);
    });
  });
}
