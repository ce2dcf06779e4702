/**
 * The scripted scenario of `qimctl demo` (DESIGN §5), run through the real admin API
 * (admin-api/client.ts) with the dev stack's admin certificate: create groups, send, add a member,
 * remove one, read history as each member, list conversation summaries from the session
 * projection, bump the projection epoch, run a rebuild drill over the demo's users, audit the
 * dispatch window, and add a crowd from a file in batches (`membership add --from-file`, the same
 * code). Every step checks what it should have done; a step that does not stops the
 * scenario (the later ones are skipped).
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ConversationAction, memberPages, type AdminClient } from "../../admin-api/client.js";
import { nodesResult } from "../cluster/results.js";
import { sleep } from "../dev/process.js";
import { dispatchAuditResult } from "../dispatch/results.js";
import { drillReportResult } from "../drill/results.js";
import { drillReportName, writeFileWhole } from "../output-files.js";
import { groupResult } from "../group/results.js";
import { historyResult, type HistoryResult } from "../history/results.js";
import { batchesOf, runBulk } from "../membership/bulk.js";
import { membershipChangeResult } from "../membership/results.js";
import { bulkBatchText } from "../membership/text.js";
import { parseUserList } from "../membership/user-file.js";
import { cmdAckResult, cmdSendResult, cmdSyncResult } from "../cmd/results.js";
import { sendResult } from "../message/results.js";
import { epochBumpResult, epochResult, projectionStatusResult, type ProjectionStatusResult } from "../projection/results.js";
import { progressBar, type ProgressLine } from "../progress.js";
import { groupsResult, pageResult, projectionListResult, type ProjectionListResult as SessionsResult } from "../sessions/results.js";
import type { Frame } from "../../admin-api/gen/qim/client/v1/frames.js";
import { DemoDevice, describe } from "./devices.js";

/** A demo device connected and authenticated (DemoDevice.connect's answer). */
type Phone = Awaited<ReturnType<typeof DemoDevice.connect>>;
import type { DemoStep } from "./results.js";

/** The steps, in order (`dev-up` and, with --down, `dev-down` are the command's own). */
export const DEMO_STEPS = [
  "create-group",
  "send-messages",
  "add-member",
  "remove-member",
  "history-boundaries",
  "conversation-summaries",
  "user-sessions",
  "bump-epoch",
  "rebuild-drill",
  "dispatch-audit",
  "cluster-nodes",
  "cmd-sync",
  "devices",
  "message-types",
  "reactions",
  "call",
  "room",
  "bulk-add",
] as const;

/** A check of the scenario that did not hold. */
export class CheckFailed extends Error {
  constructor(message: string, readonly details: Record<string, unknown> = {}) {
    super(message);
    this.name = "CheckFailed";
  }
}

function check(cond: unknown, message: string): asserts cond {
  if (!cond) throw new CheckFailed(message);
}

/** The demo's people: fresh user ids every run, with names for the narration. */
export const PEOPLE = ["alice", "bob", "carol", "dave"] as const;
export type Person = (typeof PEOPLE)[number];

export interface DemoWorld {
  tenant: string;
  users: Record<Person, string>;
  groups: { team: string; side: string };
}

/** One step's outcome for the narration: what happened and why it matters. */
interface StepOutput {
  details: Record<string, unknown>;
  lines: string[];
}

export interface ScenarioOptions {
  client: AdminClient;
  tenant: string;
  /** Narration lines (table mode: stdout; JSON mode: dropped). */
  say: (line: string) => void;
  /** Polls of GetStatus while waiting for the projection to catch up (each followed by 100 ms). */
  settleAttempts?: number;
  /** The bulk add's progress bar (stderr, on a terminal, table mode); none by default. */
  progress?: ProgressLine;
  /** How many users the bulk add adds from its file. */
  crowd?: number;
  /** Where the drill's JSON report goes (as drill rebuild's --report-dir): the stack's data dir. */
  reportDir: string;
  /** The stack's client gateway (wss://localhost:P) and the CA its certificate chains to; null: a stack started before it existed. */
  gateway: { url: string; ca: Buffer } | null;
  /** How long the devices step waits for a frame (default 15 s: the read sync comes after its 3 s merge window). */
  deviceWaitMs?: number;
}

const range = (seqs: number[]) => (seqs.length === 0 ? "nothing" : seqs.length === 1 ? `seq ${seqs[0]}` : `seq ${seqs[0]}–${seqs[seqs.length - 1]}`);
const seqsOf = (h: HistoryResult) => h.records.map((r) => r.conversationSeq);
const seqList = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const same = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** Runs the scenario's steps; the caller adds dev-up/dev-down. Never throws: failures are steps. */
export async function runScenario(opts: ScenarioOptions): Promise<{ steps: DemoStep[]; world: DemoWorld }> {
  const { client, tenant, say } = opts;
  const settleAttempts = opts.settleAttempts ?? 150;
  const users = Object.fromEntries(PEOPLE.map((p) => [p, randomUUID()])) as Record<Person, string>;
  const world: DemoWorld = { tenant, users, groups: { team: "", side: "" } };
  const name = (id: string) => PEOPLE.find((p) => users[p] === id) ?? id;
  const steps: DemoStep[] = [];
  let failed = false;

  const step = async (stepName: (typeof DEMO_STEPS)[number], title: string, fn: () => Promise<StepOutput>) => {
    if (failed) {
      steps.push({ name: stepName, ok: false, status: "skipped", details: {}, error: null });
      return;
    }
    say("");
    say(`== ${title}`);
    try {
      const out = await fn();
      for (const l of out.lines) say(`   ${l}`);
      steps.push({ name: stepName, ok: true, status: "ok", details: out.details, error: null });
    } catch (err) {
      failed = true;
      const message = err instanceof CheckFailed ? err.message : errorText(err);
      say(`   FAILED: ${message}`);
      steps.push({ name: stepName, ok: false, status: "failed", details: err instanceof CheckFailed ? err.details : {}, error: message });
    }
  };

  const send = async (group: string, who: Person, text: string) =>
    sendResult({ ...(await client.sendMessage({ tenant, group, sender: users[who], text, clientMessageId: "", mentions: [] })), group, sender: users[who] });
  const history = async (who: Person) =>
    historyResult({ ...(await client.readHistory({ tenant, group: world.groups.team, user: users[who], after: 0n, limit: 100 })), group: world.groups.team, user: users[who] });
  const sessions = async (who: Person) => projectionListResult({ ...(await client.listConversationSummaries({ tenant, user: users[who], groups: [] })), user: users[who] });

  /** Polls GetStatus until every partition's lag is 0 and no registration is pending (bounded). */
  const settle = async (): Promise<{ status: ProjectionStatusResult; polls: number }> => {
    let last: ProjectionStatusResult | undefined;
    for (let i = 1; i <= settleAttempts; i++) {
      last = projectionStatusResult(await client.getProjectionStatus({}));
      if (last.failure === null && last.partitions.every((p) => p.lag === 0 || (p.checkpoint === null && p.high === 0)) && last.pending.every((q) => q.depth === 0)) {
        return { status: last, polls: i };
      }
      await sleep(100);
    }
    throw new CheckFailed(`the session projection did not catch up after ${settleAttempts} polls of GetStatus: lag ${JSON.stringify(last?.partitions.map((p) => p.lag))}, pending ${JSON.stringify(last?.pending.map((p) => p.depth))}${last?.failure ? `, failure ${last.failure}` : ""}`);
  };

  await step("create-group", "Create two groups", async () => {
    const team = groupResult(await client.createGroup({ tenant, group: "", owner: users.alice, members: [users.bob, users.carol] }));
    const side = groupResult(await client.createGroup({ tenant, group: "", owner: users.bob, members: [users.alice] }));
    world.groups = { team: team.group, side: side.group };
    check(team.version === 1 && team.memberCount === 3 && team.conversationSeq === 0, `team: expected version 1, 3 members, seq 0; got version ${team.version}, ${team.memberCount} members, seq ${team.conversationSeq}`);
    check(side.version === 1 && side.memberCount === 2, `side: expected version 1 and 2 members; got version ${side.version}, ${side.memberCount} members`);
    return {
      details: { tenant, users, team, side },
      lines: [
        `Group "team" ${team.group}: owner alice, members bob and carol (version 1, 3 members).`,
        `Group "side" ${side.group}: owner bob, member alice. Users: ${PEOPLE.map((p) => `${p} ${users[p]}`).join(", ")}.`,
        "Initial members join at conversation_seq 0, without a control message: they see the group from its first message.",
      ],
    };
  });

  await step("send-messages", "Send messages", async () => {
    const s0 = await send(world.groups.side, "bob", "lunch at noon?");
    const sent = [await send(world.groups.team, "alice", "Welcome to the team!"), await send(world.groups.team, "bob", "Hi all"), await send(world.groups.team, "carol", "Hello!")];
    const seqs = sent.map((s) => s.conversationSeq);
    check(s0.conversationSeq === 1, `side: the first message should take seq 1, took ${s0.conversationSeq}`);
    check(same(seqs, [1, 2, 3]), `team: three messages should take seq 1, 2, 3; took ${seqs.join(", ")}`);
    return {
      details: { side: [s0], team: sent },
      lines: [
        `bob → side: seq 1. alice, bob, carol → team: ${seqs.map((s) => `seq ${s}`).join(", ")}.`,
        "Each send commits the message with the next conversation_seq of its group in one atomic step; the seq is the order everyone reads in.",
      ],
    };
  });

  let joinSeq = 0;
  await step("add-member", "Add a member", async () => {
    const add = membershipChangeResult({ ...(await client.addMembers({ tenant, group: world.groups.team, users: [users.dave], dryRun: false })), group: world.groups.team });
    check(add.outcome === "committed" && add.op === "join", `expected a committed join, got ${add.outcome} ${add.op}`);
    check(add.eventConversationSeq === 4, `the join event should take seq 4 (after messages 1–3), took ${add.eventConversationSeq}`);
    check(add.version === 2 && add.memberCount === 4, `expected version 2 and 4 members, got version ${add.version}, ${add.memberCount} members`);
    joinSeq = add.eventConversationSeq;
    const hello = await send(world.groups.team, "dave", "Glad to be here");
    check(hello.conversationSeq === 5, `dave's first message should take seq 5, took ${hello.conversationSeq}`);
    return {
      details: { change: add, message: hello },
      lines: [
        `dave joined team: one CONTROL message with conversation_seq ${add.eventConversationSeq} (version 2, 4 members); dave then sent seq 5.`,
        `His visible interval starts at the join event (joinedAt = ${add.eventConversationSeq - 1}): what was said before he joined stays private.`,
      ],
    };
  });

  let removeSeq = 0;
  await step("remove-member", "Remove a member", async () => {
    const rm = membershipChangeResult({ ...(await client.removeMembers({ tenant, group: world.groups.team, users: [users.carol], dryRun: false })), group: world.groups.team });
    check(rm.outcome === "committed" && rm.op === "remove", `expected a committed remove, got ${rm.outcome} ${rm.op}`);
    check(rm.eventConversationSeq === 6, `the remove event should take seq 6, took ${rm.eventConversationSeq}`);
    check(rm.version === 3 && rm.memberCount === 3, `expected version 3 and 3 members, got version ${rm.version}, ${rm.memberCount} members`);
    removeSeq = rm.eventConversationSeq;
    const after = await send(world.groups.team, "alice", "carol has moved to another team");
    check(after.conversationSeq === 7, `the message after the removal should take seq 7, took ${after.conversationSeq}`);
    return {
      details: { change: rm, message: after },
      lines: [
        `carol was removed from team: CONTROL message seq ${rm.eventConversationSeq} (version 3, 3 members); alice then sent seq 7.`,
        `carol's interval ends at her removal (leftAt = ${rm.eventConversationSeq}): nothing sent after it reaches her, not even through history.`,
      ],
    };
  });

  await step("history-boundaries", "Read the history of team as each member", async () => {
    const h = Object.fromEntries(await Promise.all(PEOPLE.map(async (p) => [p, await history(p)] as const))) as Record<Person, HistoryResult>;
    const all = seqList(1, 7);
    check(same(seqsOf(h.alice), all) && h.alice.earliestAvailableConversationSeq === 1, `alice should see seq 1–7 from seq 1; sees ${seqsOf(h.alice).join(",")} from ${h.alice.earliestAvailableConversationSeq}`);
    check(same(seqsOf(h.bob), all), `bob should see seq 1–7; sees ${seqsOf(h.bob).join(",")}`);
    check(h.dave.joinedAt === joinSeq - 1 && h.dave.earliestAvailableConversationSeq === joinSeq, `dave: expected joinedAt ${joinSeq - 1} and earliest ${joinSeq}; got ${h.dave.joinedAt} and ${h.dave.earliestAvailableConversationSeq}`);
    check(same(seqsOf(h.dave), seqList(joinSeq, 7)), `dave should see seq ${joinSeq}–7; sees ${seqsOf(h.dave).join(",")}`);
    const first = h.dave.records[0];
    check(first?.kind === "control" && first.membership?.op === "join" && first.membership.users.includes(users.dave), "dave's first visible record should be his own join event");
    check(h.carol.state === "REMOVED" && h.carol.leftAt === removeSeq, `carol: expected REMOVED with leftAt ${removeSeq}; got ${h.carol.state} with leftAt ${h.carol.leftAt}`);
    check(same(seqsOf(h.carol), seqList(1, removeSeq - 1)), `carol should see seq 1–${removeSeq - 1}; sees ${seqsOf(h.carol).join(",")}`);
    check(!seqsOf(h.carol).includes(7), "carol must not see the message sent after her removal");
    const row = (p: Person, why: string) => `${p.padEnd(5)}  sees ${range(seqsOf(h[p])).padEnd(9)}  earliest available ${h[p].earliestAvailableConversationSeq}, ${h[p].state}${h[p].leftAt !== null ? ` (leftAt ${h[p].leftAt})` : ""}: ${why}`;
    return {
      details: Object.fromEntries(PEOPLE.map((p) => [p, { user: users[p], joinedAt: h[p].joinedAt, leftAt: h[p].leftAt, state: h[p].state, earliestAvailableConversationSeq: h[p].earliestAvailableConversationSeq, seqs: seqsOf(h[p]) }])),
      lines: [
        row("alice", "a member since creation"),
        row("bob", "a member since creation"),
        row("dave", `from his join event (seq ${joinSeq}) on, nothing from before`),
        row("carol", `up to her removal (seq ${removeSeq}), not seq 7`),
        "History is filtered by each member's visible interval (joinedAt < seq < leftAt), on the server, for every read.",
      ],
    };
  });

  await step("conversation-summaries", "Conversation lists from the session projection", async () => {
    const { polls } = await settle();
    const [a, c, d] = [await sessions("alice"), await sessions("carol"), await sessions("dave")];
    const groupsOf = (s: SessionsResult) => s.summaries.map((x) => x.group);
    check(same(groupsOf(a).map((g) => (g === world.groups.team ? 1 : g === world.groups.side ? 2 : 0)), [1, 2]), `alice's list should be team then side (newest activity first); got ${groupsOf(a).join(", ")}`);
    check(a.summaries[0]!.head?.conversationSeq === 7, `alice's team head should be seq 7, is ${a.summaries[0]!.head?.conversationSeq}`);
    const ct = c.summaries.find((x) => x.group === world.groups.team);
    check(ct !== undefined, "carol's list should still hold team (a removed member keeps the conversation)");
    check(ct.state === "REMOVED" && ct.head?.conversationSeq === removeSeq - 1, `carol's team should be REMOVED with head seq ${removeSeq - 1}; is ${ct.state} with head ${ct.head?.conversationSeq}`);
    const dt = d.summaries.find((x) => x.group === world.groups.team);
    check(dt !== undefined && dt.head?.conversationSeq === 7, "dave's list should hold team with head seq 7");
    const line = (who: Person, s: SessionsResult) =>
      `${who.padEnd(5)}  ${s.summaries.map((x) => `${x.group === world.groups.team ? "team" : x.group === world.groups.side ? "side" : x.group} (head seq ${x.head?.conversationSeq ?? "-"}, unread ${x.unread}, ${x.state})`).join(", ")}`;
    return {
      details: { statusPolls: polls, alice: a, carol: c, dave: d },
      lines: [
        `The projection caught up (${polls} poll(s) of GetStatus: lag 0, nothing pending).`,
        line("alice", a),
        line("carol", c),
        line("dave", d),
        "Each user's list is kept by a consumer of the dispatch log, newest activity first; carol keeps team, frozen at her last visible message.",
      ],
    };
  });

  await step("user-sessions", "alice's conversation list: unread, and a pinned conversation", async () => {
    // alice pins side, as support would with qimctl conversation pin --group side --as alice
    const pinned = await client.changeConversation({ tenant, user: users.alice, group: world.groups.side, action: ConversationAction.CONVERSATION_ACTION_PIN, pinRank: 0 });
    check(pinned.row?.pinRank === 0, `side should be pinned at rank 0 for alice; pin rank ${pinned.row?.pinRank}`);
    // qimctl sessions --user alice: the conversation-list engine's snapshot page
    const page = pageResult(users.alice, await client.listConversations({ tenant, user: users.alice, limit: 0, cursor: "" }));
    const order = page.summaries.map((x) => (x.group === world.groups.team ? "team" : x.group === world.groups.side ? "side" : x.group));
    check(order.join(",") === "side,team", `the pinned zone comes first: expected side then team (team has the newer activity), got ${order.join(", ")}`);
    const [side, team] = page.summaries as [typeof page.summaries[0], typeof page.summaries[0]];
    check(side.pinned === true && team.pinned === false, `side should be pinned and team not; pinned ${side.pinned}, ${team.pinned}`);
    // by hand: bob's "lunch at noon?" is the only message in side and alice has not read it
    check(side.unread === 1 && side.unreadExact, `alice's side should have 1 unread (bob's message), has ${side.unread}`);
    // the cached unread equals the definitional one, read from the group directly (qimctl sessions --user alice --group team)
    const def = groupsResult(users.alice, await client.listConversationSummaries({ tenant, user: users.alice, groups: [world.groups.team] })).summaries[0]!;
    check(team.unread === def.unread, `alice's cached unread in team (${team.unread}) should equal the definition (${def.unread})`);
    const badge = await client.getBadge({ tenant, user: users.alice });
    check(badge.totalUnread === side.unread + team.unread, `alice's badge should be the sum of her rows, ${side.unread + team.unread}; is ${badge.totalUnread}`);
    return {
      details: { page, badge: { totalUnread: badge.totalUnread, totalMention: badge.totalMention } },
      lines: [
        `qimctl sessions --user alice (snapshot revision ${page.snapshotRevision}): side (pinned, unread ${side.unread}), team (unread ${team.unread}, head seq ${team.head?.conversationSeq ?? "-"}); badge total unread ${badge.totalUnread}.`,
        "Pinned conversations come first whatever their activity; unread is kept per conversation by the conversation-list engine and equals the definition (checked against the group itself).",
      ],
    };
  });

  await step("bump-epoch", "Bump the projection epoch", async () => {
    const before = epochResult(await client.getEpoch({ limit: 1 }));
    const bump = epochBumpResult(await client.bumpEpoch({ reason: "demo" }));
    check(bump.epoch === before.epoch + 1 && bump.reason === "demo", `expected epoch ${before.epoch + 1} with reason "demo"; got ${bump.epoch} "${bump.reason}"`);
    const after = epochResult(await client.getEpoch({ limit: 1 }));
    check(after.epoch === bump.epoch, `GetEpoch should show ${bump.epoch}, shows ${after.epoch}`);
    const a = await sessions("alice");
    check(a.rebuilt === true, "alice's next pull should be rebuilt from the authority (her epoch mark is behind)");
    check(a.total === 2 && a.summaries.some((x) => x.group === world.groups.team) && a.summaries.some((x) => x.group === world.groups.side), `alice's rebuilt list should hold team and side; holds ${a.summaries.map((x) => x.group).join(", ")}`);
    return {
      details: { before: before.epoch, bump, aliceAfter: { rebuilt: a.rebuilt, total: a.total, epoch: a.epoch } },
      lines: [
        `Epoch ${before.epoch} → ${bump.epoch} by ${bump.by} (reason "demo"). Use it when the projection may have lost entries (a Redis restored from a snapshot).`,
        `alice's next pull merged her list back from the authority (rebuilt: true): still ${a.total} conversations, nothing lost.`,
      ],
    };
  });

  await step("rebuild-drill", "Rebuild drill over the demo's users", async () => {
    await settle();
    const report = drillReportResult(await client.runRebuildDrill({ users: PEOPLE.map((p) => ({ tenant, user: users[p] })), wipe: "projection", reason: "demo" }));
    // written ok or not, where drill rebuild through this stack's context writes its own (dev down --purge removes it)
    const reportPath = path.join(opts.reportDir, drillReportName(report.drillId));
    writeFileWhole(reportPath, `${JSON.stringify(report, null, 2)}\n`);
    check(report.users === PEOPLE.length, `the drill should cover ${PEOPLE.length} users, covered ${report.users}`);
    check(report.conversationsBefore === 6 && report.conversationsAfter === 6, `expected 6 conversations before and after (alice 2, bob 2, carol 1, dave 1); got ${report.conversationsBefore} → ${report.conversationsAfter}`);
    if (!report.ok || report.differences.length > 0) {
      throw new CheckFailed(`the drill found ${report.differences.length} difference(s): ${report.differences.slice(0, 5).map((x) => `user ${name(x.user)} conversation ${x.conversation} ${x.field} ${JSON.stringify(x.before)} → ${JSON.stringify(x.after)}`).join("; ")}`, { report });
    }
    return {
      details: { report, reportPath },
      lines: [
        `Drill ${report.drillId}: recorded ${report.users} users' ${report.conversationsBefore} conversations, wiped their projection, bumped the epoch ${report.epochBefore} → ${report.epochAfter}, rebuilt each list from the authority and compared: no difference.`,
        `This is what CI runs (qimctl drill rebuild) to prove the projection can be rebuilt from ${report.authority.split(" (")[0]}.`,
        `Its report: ${reportPath} (qimctl dev down --purge removes it with the stack).`,
      ],
    };
  });

  await step("dispatch-audit", "Audit the dispatch log's retention window", async () => {
    const audit = dispatchAuditResult(await client.auditDispatch({}));
    const bad = audit.partitions.filter((p) => p.verdict !== "OK");
    check(audit.ok && bad.length === 0, `every partition should be OK; not OK: ${bad.map((p) => `${p.partition} ${p.verdict} (${p.detail})`).join("; ")}`);
    return {
      details: { audit },
      lines: [
        `All ${audit.partitions.length} partitions OK: every checkpoint is inside the log's retention window, no record left it unprojected.`,
        "qimctl dispatch audit exits 4 when a partition is not OK: run it in monitoring and CI.",
      ],
    };
  });

  await step("cluster-nodes", "The engine's nodes and what each owns", async () => {
    // qimctl cluster nodes: every engine server is a node; the live ones own every unit between them
    const nodes = nodesResult(await client.listNodes({}));
    const live = nodes.nodes.filter((n) => n.alive && !n.draining);
    check(live.length >= 1 && live.some((n) => n.nodeId === nodes.answeredBy), `the node that answered (${nodes.answeredBy}) should be listed alive`);
    const relay = live.reduce((s, n) => s + n.owned.relayBuckets, 0);
    const slots = live.reduce((s, n) => s + n.owned.slots, 0);
    check(relay === 256 && slots === 256, `the live nodes should own all 256 relay buckets and 256 user slots between them; own ${relay} and ${slots}`);
    return {
      details: { nodes },
      lines: [
        ...live.map((n) => `${n.nodeId}${n.nodeId === nodes.answeredBy ? " (answered)" : ""}: ${n.owned.relayBuckets} relay buckets, ${n.owned.partitions} dispatch partitions, ${n.owned.slots} user slots; heartbeat ${n.heartbeatAgeMs} ms ago.`),
        "A node that stops heartbeating loses its units to the live nodes after the lease; qimctl cluster drain hands them over first.",
      ],
    };
  });

  await step("cmd-sync", "System commands (CMD) and their offline sync", async () => {
    // qimctl cmd send --channel TEAM (type 2, no --to): the group's active members at that moment,
    // frozen (alice, bob, dave; carol was removed); then a command to bob alone
    const text = (t: string) => Buffer.from(t, "utf8");
    const toTeam = cmdSendResult({
      ...(await client.cmdSend({
        tenant, channelId: world.groups.team, channelType: 2, from: "", to: [], noPersist: false, payload: text("refresh-settings"), clientMsgNo: "", redDot: false, syncOnce: false,
      })),
      tenant,
    });
    const expected = [users.alice, users.bob, users.dave].sort();
    check(JSON.stringify([...toTeam.message.recipients].sort()) === JSON.stringify(expected), `the command to team should reach its 3 active members (not carol), reached ${toTeam.message.recipients.map(name).join(", ")}`);
    check(toTeam.message.messageSeq === 1 && toTeam.message.channelId === `${world.groups.team}____cmd`, `the channel's first command should take seq 1 on ${world.groups.team}____cmd, took ${toTeam.message.messageSeq} on ${toTeam.message.channelId}`);
    const toBob = cmdSendResult({
      ...(await client.cmdSend({
        tenant, channelId: `ops-${users.bob}`, channelType: 1, from: "", to: [users.bob], noPersist: false, payload: text("rotate-token"), clientMsgNo: "", redDot: true, syncOnce: false,
      })),
      tenant,
    });
    // qimctl cmd sync --as-app --user bob (as bob's application: it records the generation the ack
    // applies): both commands; carol: none; after cmd ack, bob's next sync: none
    const bob1 = cmdSyncResult({ ...(await client.cmdSync({ tenant, user: users.bob, limit: 0, peek: false })), tenant, user: users.bob, recorded: true });
    const got = bob1.messages.map((m) => `${m.channelId}#${m.messageSeq}:${m.text}`).sort();
    const want = [`${toTeam.message.channelId}#1:refresh-settings`, `${toBob.message.channelId}#1:rotate-token`].sort();
    check(JSON.stringify(got) === JSON.stringify(want), `bob's sync should answer the two commands, answered ${JSON.stringify(got)}`);
    const carol = cmdSyncResult({ ...(await client.cmdSync({ tenant, user: users.carol, limit: 0, peek: false })), tenant, user: users.carol, recorded: true });
    check(carol.messages.length === 0, `carol left team before the command: her sync should be empty, answered ${carol.messages.length}`);
    const ack = cmdAckResult({ ...(await client.cmdAck({ tenant, user: users.bob, lastMessageSeq: 1n })), tenant, user: users.bob });
    const bob2 = cmdSyncResult({ ...(await client.cmdSync({ tenant, user: users.bob, limit: 0, peek: false })), tenant, user: users.bob, recorded: true });
    check(bob2.messages.length === 0, `after the ack, bob's next sync should be empty, answered ${bob2.messages.length}`);
    return {
      details: { sent: [toTeam, toBob], bobSync: bob1, carolSync: carol, bobAck: ack, bobSyncAfterAck: bob2 },
      lines: [
        `A command to team (${toTeam.message.channelId}, seq 1) reached its members at that moment: ${toTeam.message.recipients.map(name).sort().join(", ")}; carol, removed before it, did not.`,
        `bob's sync answered ${bob1.messages.length} commands (team's and one sent to him alone); after his ack (${ack.advanced} channels advanced) his next sync answered none.`,
        "Application servers use the same sync over HTTP (POST /message/sync, /message/syncack; dev status names syncUrl).",
      ],
    };
  });

  await step("devices", "Devices online: a send arrives, a read syncs to the other device without echo", async () => {
    if (!opts.gateway) throw new CheckFailed("this stack has no client gateway (it was started before it existed): stop it with qimctl dev down and run the demo again");
    const { url, ca } = opts.gateway;
    const wait = opts.deviceWaitMs ?? 15_000;
    const team = world.groups.team;
    // qimctl token issue --user U --device D: what an application server does for its devices
    const token = async (who: Person, device: string) => (await client.issueToken({ tenant, user: users[who], device, ttlMs: 10n * 60_000n, dryRun: false })).token;
    const open: DemoDevice[] = [];
    try {
      const connect = async (who: Person, device: string) => {
        const c = await DemoDevice.connect(url, ca, await token(who, device), device, wait);
        open.push(c.device);
        return c;
      };
      const alicePhone = await connect("alice", "phone");
      const aliceLaptop = await connect("alice", "laptop");
      const bobPhone = await connect("bob", "phone");
      check(alicePhone.authOk.user === users.alice && aliceLaptop.authOk.deviceId === "laptop", "AUTH_OK should name alice and each device");
      // bob sends through his device: SEND_ACK comes only after the durable commit
      const sent = await bobPhone.device.request({ $case: "send", send: { clientMsgNo: randomUUID(), group: team, payload: Buffer.from("standup in 5", "utf8"), contentType: "text", mentions: [] } }, wait);
      check(sent.body?.$case === "sendAck", `bob's SEND should be acknowledged, was answered ${describe(sent)}`);
      const seq = sent.body.sendAck.conversationSeq;
      const arrived = (f: Frame) => f.body?.$case === "message" && f.body.message.group === team && f.body.message.conversationSeq === seq;
      await alicePhone.device.waitFor(arrived, wait, `bob's message (seq ${seq}) on alice's phone`);
      await aliceLaptop.device.waitFor(arrived, wait, `bob's message (seq ${seq}) on alice's laptop`);
      // alice reads it on her phone; her laptop is told (READ_SYNC, then a recomputed badge), the phone is not
      const marked = await alicePhone.device.request({ $case: "markRead", markRead: { group: team, readSeq: seq } }, wait);
      check(marked.body?.$case === "markReadAck", `alice's MARK_READ should be acknowledged, was answered ${describe(marked)}`);
      const synced = await aliceLaptop.device.waitFor((f) => f.body?.$case === "readSync" && f.body.readSync.group === team, wait, "READ_SYNC on alice's laptop");
      const syncedSeq = synced.body?.$case === "readSync" ? synced.body.readSync.readSeq : -1n;
      check(syncedSeq === seq, `the laptop's READ_SYNC should carry seq ${seq}, carried ${syncedSeq}`);
      const badge = await aliceLaptop.device.waitFor((f) => f.body?.$case === "badgeUpdate" && aliceLaptop.device.received.indexOf(f) > aliceLaptop.device.received.indexOf(synced), wait, "BADGE_UPDATE on alice's laptop after the read");
      // the event went to every other device at once: a moment more for an echo that should not come
      await sleep(500);
      const echoes = alicePhone.device.pushes("readSync").length;
      check(echoes === 0, `alice's phone marked the read itself and should receive no READ_SYNC, received ${echoes}`);
      const laptopUnread = badge.body?.$case === "badgeUpdate" ? badge.body.badgeUpdate.badge?.totalUnread : undefined;
      const ackUnread = marked.body.markReadAck.badge?.totalUnread;
      check(laptopUnread === ackUnread, `the laptop's badge (${laptopUnread}) should be the phone's after the read (${ackUnread})`);
      return {
        details: { group: team, seq: Number(seq), devices: ["alice/phone", "alice/laptop", "bob/phone"], readSyncOnPhone: echoes, badgeTotalUnread: Number(ackUnread ?? 0n) },
        lines: [
          `alice's phone and laptop and bob's phone connected to the client gateway (${url}) with device tokens (qimctl token issue).`,
          `bob sent "standup in 5" from his phone: SEND_ACK seq ${seq} after the durable commit; both of alice's devices received it (MESSAGE).`,
          `alice read it on her phone (MARK_READ seq ${seq}); her laptop received READ_SYNC seq ${seq} and a new badge (total unread ${ackUnread}); the phone received no echo.`,
        ],
      };
    } finally {
      for (const d of open) d.close();
    }
  });

  /**
   * The gateway steps' set-up: alice's and bob's phones connected and authenticated with tokens
   * issued as an application server does (qimctl token issue), closed after `body` however it ends.
   */
  const withPhones = async <R>(body: (d: { alicePhone: Phone; bobPhone: Phone; wait: number; team: string }) => Promise<R>): Promise<R> => {
    if (!opts.gateway) throw new CheckFailed("this stack has no client gateway (it was started before it existed): stop it with qimctl dev down and run the demo again");
    const { url, ca } = opts.gateway;
    const wait = opts.deviceWaitMs ?? 15_000;
    const token = async (who: Person, device: string) => (await client.issueToken({ tenant, user: users[who], device, ttlMs: 10n * 60_000n, dryRun: false })).token;
    const open: DemoDevice[] = [];
    try {
      const phone = async (who: Person) => {
        const c = await DemoDevice.connect(url, ca, await token(who, "phone"), "phone", wait);
        open.push(c.device);
        return c;
      };
      const alicePhone = await phone("alice");
      const bobPhone = await phone("bob");
      return await body({ alicePhone, bobPhone, wait, team: world.groups.team });
    } finally {
      for (const d of open) d.close();
    }
  };

  await step("message-types", "A custom message type, a recall and a moderator's edit", async () => {
    // qimctl registry apply -f types.yaml: a poll that shows as "[poll]" on devices that do not render it, and never counts as unread
    const applied = await client.applyTypes({
      tenant, put: [{ customType: "demo.poll.v1", previewTemplate: "[poll]", countsUnread: false }], delete: [], prune: false, ignoreMissing: false, dryRun: false,
    });
    return withPhones(async ({ alicePhone, bobPhone, wait, team }) => {
      const send = async (payload: Buffer, contentType: string) => {
        const r = await bobPhone.device.request({ $case: "send", send: { clientMsgNo: randomUUID(), group: team, payload, contentType, mentions: [] } }, wait);
        check(r.body?.$case === "sendAck", `bob's ${contentType} SEND should be acknowledged, was answered ${describe(r)}`);
        return r.body.sendAck.conversationSeq;
      };
      const pollSeq = await send(Buffer.from(JSON.stringify({ q: "pizza or sushi?" })), "demo.poll.v1");
      const poll = await alicePhone.device.waitFor((f) => f.body?.$case === "message" && f.body.message.conversationSeq === pollSeq, wait, `bob's poll (seq ${pollSeq}) on alice's phone`);
      const preview = poll.body?.$case === "message" ? poll.body.message.preview : "";
      check(preview === "[poll]", `the poll's MESSAGE should carry the preview "[poll]", carried ${JSON.stringify(preview)}`);
      // bob sends to the wrong chat and takes it back from his phone (RECALL, within 2 minutes)
      const oopsSeq = await send(Buffer.from("my password is hunter2"), "text");
      const recalled = await bobPhone.device.request({ $case: "recall", recall: { group: team, conversationSeq: oopsSeq } }, wait);
      check(recalled.body?.$case === "anchorAck", `bob's RECALL should be acknowledged, was answered ${describe(recalled)}`);
      const recallSeq = recalled.body.anchorAck.eventSeq;
      const event = await alicePhone.device.waitFor((f) => f.body?.$case === "message" && f.body.message.conversationSeq === recallSeq, wait, `the recall event (seq ${recallSeq}) on alice's phone`);
      check(event.body?.$case === "message" && event.body.message.targetSeq === oopsSeq, `the recall event should name seq ${oopsSeq}`);
      // a moderator edits bob's seq 2 (qimctl message edit --reason: audited)
      const edit = await client.editMessage({ tenant, group: team, conversationSeq: 2n, text: "Hi all (edited by a moderator)", reason: "demo", clientMessageId: "" });
      const h = await history("alice");
      const at = (seq: bigint | number) => h.records.find((r) => r.conversationSeq === Number(seq));
      check(at(pollSeq)?.countsUnread === false, "the poll should not count as unread (its declaration says so)");
      check(at(oopsSeq)?.state === "recalled" && at(oopsSeq)?.payloadBase64 === "", `seq ${oopsSeq} should read as recalled with its content gone`);
      check(at(2)?.state === "edited" && at(2)?.text === "Hi all (edited by a moderator)", "seq 2 should read as edited");
      return {
        details: { registryVersion: Number(applied.version), pollSeq: Number(pollSeq), recalledSeq: Number(oopsSeq), recallEventSeq: Number(recallSeq), editEventSeq: Number(edit.eventSeq) },
        lines: [
          `The tenant's registry declares demo.poll.v1 (registry version ${applied.version}): bob's poll took seq ${pollSeq} and reached alice's phone with its preview "[poll]"; it counts toward nobody's unread.`,
          `bob recalled seq ${oopsSeq} from his phone: the recall event took seq ${recallSeq} and reached alice's phone naming seq ${oopsSeq}; history shows it recalled, its content gone.`,
          `A moderator edited seq 2 (event seq ${edit.eventSeq}, reason audited). The events render at their targets: the list's order and preview do not move.`,
        ],
      };
    });
  });

  await step("reactions", "Reactions: counts pushed to the members online, never a message or an unread", async () => {
    return withPhones(async ({ alicePhone, bobPhone, wait, team }) => {
      const badgeBefore = (await client.getBadge({ tenant, user: users.bob })).totalUnread;
      const react = async (d: { device: DemoDevice }, key: string) => {
        const r = await d.device.request({ $case: "react", react: { group: team, conversationSeq: 1n, reactionKey: key, remove: false } }, wait);
        check(r.body?.$case === "reactAck", `the REACT should be acknowledged, was answered ${describe(r)}`);
        return r.body.reactAck;
      };
      // bob likes alice's first message; alice's phone gets the counts at once (REACTION_UPDATE)
      const liked = await react(bobPhone, "👍");
      const countsOf = (r: { counts: { key: string; count: bigint }[] } | undefined) => (r?.counts ?? []).map((c) => `${c.key} ${c.count}`).join(", ");
      const first = await alicePhone.device.waitFor((f) => f.body?.$case === "reactionUpdate" && f.body.reactionUpdate.conversationSeq === 1n, wait, "REACTION_UPDATE on alice's phone");
      check(first.body?.$case === "reactionUpdate" && countsOf(first.body.reactionUpdate.reactions) === "👍 1", "alice's phone should show 👍 1");
      // alice adds two within the same 2 s: bob's phone gets the first at once, then one frame with the latest counts
      await react(alicePhone, "👍");
      const last = await react(alicePhone, "🎉");
      await bobPhone.device.waitFor((f) => f.body?.$case === "reactionUpdate" && f.body.reactionUpdate.reactions?.summaryVersion === last.reactions?.summaryVersion, wait, "the merged REACTION_UPDATE on bob's phone");
      const bobFrames = bobPhone.device.pushes("reactionUpdate").length;
      const summary = await client.getReactions({ tenant, group: team, conversationSeq: 1n, withUsers: false, cursor: "", limit: 0 });
      check(countsOf(summary.summary) === "👍 2, 🎉 1", `the summary should be 👍 2, 🎉 1, is ${countsOf(summary.summary)}`);
      const badgeAfter = (await client.getBadge({ tenant, user: users.bob })).totalUnread;
      check(badgeAfter === badgeBefore, `a reaction should change no badge: bob's went ${badgeBefore} → ${badgeAfter}`);
      check(bobPhone.device.pushes("message").length === 0, "a reaction should push no MESSAGE");
      return {
        details: { group: team, seq: 1, counts: countsOf(summary.summary), summaryVersion: Number(summary.summary?.summaryVersion ?? 0), likedVersion: Number(liked.reactions?.summaryVersion ?? 0), bobFrames, bobBadge: Number(badgeAfter) },
        lines: [
          `bob reacted 👍 to alice's first message from his phone: REACT_ACK with the absolute counts; alice's phone received REACTION_UPDATE "👍 1" at once.`,
          `alice added 👍 and 🎉 within 2 s: bob's phone received ${bobFrames} REACTION_UPDATE frames in all (the first at once, the rest merged into one with the latest counts: ${countsOf(summary.summary)}, version ${summary.summary?.summaryVersion}).`,
          `No message, no unread, no list change: bob's badge stayed at ${badgeAfter}. See who with: qimctl message reactions --group ${team} --seq 1 --users`,
        ],
      };
    });
  });

  await step("call", "alice sees bob online and calls him: his phone rings; the call record is an ordinary message", async () => {
    return withPhones(async ({ alicePhone, bobPhone, wait, team }) => {
      // presence (PRESENCE_SUB): alice's phone watches bob through their group; never stored
      const watched = await alicePhone.device.request({ $case: "presenceSub", presenceSub: { group: team, users: [users.bob], unsubscribe: false } }, wait);
      check(watched.body?.$case === "presenceSubAck", `alice's PRESENCE_SUB should be acknowledged, was answered ${describe(watched)}`);
      const bobOnline = watched.body.presenceSubAck.states.find((st) => st.user === users.bob)?.online;
      check(bobOnline === true, "bob's phone is connected: alice should see him online");
      const callId = randomUUID();
      // RtcKind: INVITE 1, ACCEPT 2, END 5 (proto/qim/client/v1); the payload would carry the SFU's address and credentials
      const signal = async (from: { device: DemoDevice }, to: Person, kind: number, payload = "") => {
        const r = await from.device.request({ $case: "rtcSignal", rtcSignal: { group: team, targetUser: users[to], callId, kind, signalPayload: Buffer.from(payload) } }, wait);
        check(r.body?.$case === "rtcSignalAck", `the RTC_SIGNAL should be acknowledged, was answered ${describe(r)}`);
        return r.body.rtcSignalAck.outcome;
      };
      const pushedTo = (d: { device: DemoDevice }, kind: number, what: string) => d.device.waitFor((f) => f.body?.$case === "rtcSignalPush" && f.body.rtcSignalPush.callId === callId && f.body.rtcSignalPush.kind === kind, wait, what);
      const rang = await signal(alicePhone, "bob", 1, "sfu=demo-relay");
      check(rang === "ringing", `alice's INVITE should ring bob's phone, answered ${rang}`);
      await pushedTo(bobPhone, 1, "the INVITE on bob's phone");
      await signal(bobPhone, "alice", 2);
      await pushedTo(alicePhone, 2, "bob's ACCEPT on alice's phone");
      await signal(alicePhone, "bob", 5);
      await pushedTo(bobPhone, 5, "alice's END on bob's phone");
      // the call record: an ordinary message of the built-in call_record type, sent by the caller's client
      const rec = await alicePhone.device.request({ $case: "send", send: { clientMsgNo: randomUUID(), group: team, payload: Buffer.from(JSON.stringify({ callId, seconds: 1 })), contentType: "call_record", mentions: [] } }, wait);
      check(rec.body?.$case === "sendAck" && rec.body.sendAck.conversationSeq > 0n, `the call record should be a stored message, was answered ${describe(rec)}`);
      const recordSeq = Number(rec.body.sendAck.conversationSeq);
      // bob's phone goes: alice's phone is told he is offline (PRESENCE_UPDATE)
      bobPhone.device.close();
      await alicePhone.device.waitFor((f) => f.body?.$case === "presenceUpdate" && f.body.presenceUpdate.states.some((st) => st.user === users.bob && !st.online), wait, "bob offline on alice's phone");
      return {
        details: { group: team, callId, rang, recordSeq, bobOnlineBefore: bobOnline, bobOfflineAfter: true },
        lines: [
          `alice's phone watched bob's presence (PRESENCE_SUB): online. She called him (RTC_SIGNAL INVITE): his phone rang; he answered (ACCEPT), she hung up (END). The signals passed between the devices and were stored nowhere.`,
          `bob's phone disconnected: alice's phone was told he is offline (PRESENCE_UPDATE). Presence is never stored.`,
          `The call record is an ordinary message (call_record, seq ${recordSeq}): in history, synced to offline devices, counted as its declaration says.`,
        ],
      };
    });
  });

  await step("room", "A chat room: messages to the devices in it now, merged, kept only for a short replay", async () => {
    return withPhones(async ({ alicePhone, bobPhone, wait }) => {
      const room = randomUUID();
      const join = async (d: { device: DemoDevice }) => {
        const r = await d.device.request({ $case: "roomJoin", roomJoin: { room, afterRoomSeq: 0n } }, wait);
        check(r.body?.$case === "roomBatch", `ROOM_JOIN should be answered with ROOM_BATCH, was answered ${describe(r)}`);
        return r.body.roomBatch.windows[0]!;
      };
      const joined = await join(alicePhone);
      await join(bobPhone);
      const badgeBefore = (await client.getBadge({ tenant, user: users.bob })).totalUnread;
      // alice sends three at once: bob's phone gets them in as few frames as room_outbound_frame_rate allows (10 a second)
      const acks = await Promise.all(["the stream starts in 5", "4", "3"].map(async (text) => {
        const r = await alicePhone.device.request({ $case: "roomSend", roomSend: { room, clientMsgNo: randomUUID(), contentType: "text/plain", payload: Buffer.from(text) } }, wait);
        check(r.body?.$case === "roomSendAck", `ROOM_SEND should be acknowledged, was answered ${describe(r)}`);
        return r.body.roomSendAck.roomSeq;
      }));
      const last = acks.reduce((a, b) => (b > a ? b : a));
      const events = () => bobPhone.device.pushes("roomBatch").flatMap((b) => b.roomBatch.windows).filter((w) => w.room === room).flatMap((w) => w.events);
      await bobPhone.device.waitFor(() => events().some((e) => e.roomSeq === last), wait, "the three room messages on bob's phone");
      const frames = bobPhone.device.pushes("roomBatch").length;
      const epoch = Number(last >> 48n);
      const shown = (await client.getRoom({ tenant, room })).room!;
      check(shown.online === 2, `the room should count 2 connections online, counts ${shown.online}`);
      const badgeAfter = (await client.getBadge({ tenant, user: users.bob })).totalUnread;
      check(badgeAfter === badgeBefore, `a room message should change no badge: bob's went ${badgeBefore} → ${badgeAfter}`);
      const counters = events().map((e) => Number(e.roomSeq & ((1n << 48n) - 1n)));
      return {
        details: { room, epoch, writer: shown.writer, online: shown.online, counters, bobFrames: frames, joinedEpoch: joined.roomEpoch },
        lines: [
          `alice and bob joined room ${room} from their phones (ROOM_JOIN). Its writer is ${shown.writer}, epoch ${epoch} (the room unit lease's token: it grows if the writer restarts or moves).`,
          `alice sent three at once: bob's phone got room_seqs ${counters.map((c) => `${epoch}:${c}`).join(", ")} in ${frames} ROOM_BATCH frame(s) (at most 10 a second, the rest merged).`,
          `No mailbox, no list, no unread: bob's badge stayed at ${badgeAfter}. The room counts ${shown.online} online (qimctl room show --room ${room}); a restarted writer starts it empty.`,
        ],
      };
    });
  });

  await step("bulk-add", "Add a crowd from a file, in batches", async () => {
    const crowd = opts.crowd ?? 2500;
    const group = groupResult(await client.createGroup({ tenant, group: "", owner: users.alice, members: [] })).group;
    const dir = mkdtempSync(path.join(os.tmpdir(), "qim-demo-crowd-"));
    try {
      const file = path.join(dir, "crowd.txt");
      writeFileSync(file, `# ${crowd} new users for the crowd group, one UUID per line\n${Array.from({ length: crowd }, () => randomUUID()).join("\n")}\n`);
      const list = parseUserList(readFileSync(file, "utf8"));
      check(list.badCount === 0 && list.users.length === crowd, `the file should name ${crowd} users, names ${list.users.length} (${list.badCount} bad lines)`);
      const batches = batchesOf(list.users);
      const bar = opts.progress;
      say(`   alice onboards ${crowd} users into a new group "crowd" ${group} from ${file}, as qimctl membership add --from-file does:`);
      say(`   ${batches.length} batches of at most ${batches[0]!.length} users (the server's limit per call), each its own membership event.`);
      let done = 0;
      const bulk = (dryRun: boolean) => runBulk({
        tenant, group, op: "join", batches, duplicates: list.duplicates, dryRun, resume: `qimctl membership add --group ${group} --from-file ${file}`,
        rpc: (req) => client.addMembers(req),
        onSend: (batch) => bar?.update(`${progressBar(batch - 1, batches.length)} batch ${batch}/${batches.length} in flight · ${done}/${crowd} users`),
        onBatch: (line) => {
          done += line.users;
          bar?.above(() => say(`     ${bulkBatchText(line)}`));
        },
      });
      const first = await bulk(false);
      bar?.clear();
      if (first.error !== undefined) throw first.error;
      const seqs = first.summary.events!.map((e) => e.eventConversationSeq);
      check(first.summary.outcome === "completed" && first.summary.changed === crowd, `every user should be added; ${first.summary.outcome}, ${first.summary.changed} added`);
      check(same(seqs, seqList(1, batches.length)) && first.summary.events!.every((e) => e.outcome === "committed"), `one event per batch, seq 1–${batches.length}; got ${seqs.join(", ")}`);
      check(first.summary.memberCount === crowd + 1, `expected ${crowd + 1} members, got ${first.summary.memberCount}`);
      say("   Run it again, as after a Ctrl+C or a failed batch: the same batches, each found already applied.");
      done = 0;
      const again = await bulk(false);
      bar?.clear();
      if (again.error !== undefined) throw again.error;
      const shown = groupResult(await client.getGroup({ tenant, group }));
      check(again.summary.changed === 0 && again.lines.every((l) => l.outcome === "duplicate" || l.outcome === "noop"), `the re-run should change nothing; it changed ${again.summary.changed}`);
      check(shown.conversationSeq === batches.length && shown.version === batches.length + 1, `no event after the re-run: expected seq ${batches.length} and version ${batches.length + 1}, got seq ${shown.conversationSeq} and version ${shown.version}`);
      // the demo's crowd is small: its ids fit in memory (a member may show on two pages)
      const active = new Set<string>();
      for await (const page of memberPages(client, { tenant, group })) for (const m of page.members) if (m.state === "ACTIVE") active.add(m.userId);
      const members = active.size;
      check(members === crowd + 1, `membership list should show ${crowd + 1} active members, shows ${members}`);
      return {
        details: { group, users: crowd, batches: first.lines, summary: first.summary, rerun: again.summary },
        lines: [
          `${crowd} users added as ${batches.length} events (seq ${seqs.join(", ")}); the re-run added nothing (${again.lines.map((l) => l.outcome).join(", ")}): ${members} active members.`,
          "A re-run applies only what is missing, so an interrupted bulk change is resumed by running the same command again.",
        ],
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  return { steps, world };
}

function errorText(err: unknown): string {
  const e = err as { code?: unknown; details?: unknown; message?: unknown };
  if (typeof e?.code === "number" && typeof e.details === "string") return `gRPC status ${e.code}: ${e.details}`;
  return err instanceof Error ? err.message : String(err);
}
