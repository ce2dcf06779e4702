/**
 * Scenarios of the session projection shared by the Redis-hash and the Cassandra authority tests:
 * the same engine, relay and dispatch log (real Redis), a ProjectionStack over the authority
 * under test, and the checks of spec 000 acceptance 5.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import {
  ProjectionStack,
  type CassandraOptions,
  type ConversationStateAuthority,
  type UserSessionPage,
  type Uuid,
} from "../../core/index.js";
import type { EngineFixture } from "./fixture.js";
import { ucsPendingKey } from "../../core/index.js";
import { newUuid } from "../../core/index.js";

export interface World {
  tenant: Uuid;
  users: Uuid[];
  groups: Uuid[];
}

/** A new stack over the fixture's engine and log, driven by hand: no background polling or trimming. */
export function newStack(fx: EngineFixture, authority: ConversationStateAuthority, lines: string[] = []): ProjectionStack {
  return new ProjectionStack({ store: fx.store, keys: fx.engine.keys, conversations: fx.engine, log: fx.log, authority }, {
    background: false,
    log: (l) => lines.push(l),
    onError: (err) => lines.push(`error: ${(err as Error).message}`),
  });
}

/**
 * Users in overlapping groups with messages, a join and a removal: every user ends up with
 * several conversations and non-trivial unread (some read marks, a left member's bound).
 */
export async function buildWorld(fx: EngineFixture, nUsers = 6, nGroups = 4): Promise<World> {
  const tenant = fx.tenant();
  const users = Array.from({ length: nUsers }, () => newUuid());
  const groups: Uuid[] = [];
  for (let g = 0; g < nGroups; g++) {
    const members = users.filter((_, i) => (i + g) % 3 !== 0);
    const owner = members[0]!;
    const { group } = await fx.engine.createGroup({ tenant, owner, members: members.slice(1) });
    groups.push(group);
    for (let m = 0; m < 3 + g; m++) await fx.engine.send({ tenant, group, sender: members[m % members.length]!, text: `g${g} m${m}` });
    const outsider = users.find((u) => !members.includes(u))!;
    await fx.engine.addMembers({ tenant, group, users: [outsider] });
    await fx.engine.send({ tenant, group, sender: owner, text: `welcome` });
    await fx.engine.removeMembers({ tenant, group, users: [members[members.length - 1]!] });
    await fx.engine.send({ tenant, group, sender: owner, text: `after the removal` });
    await fx.engine.markRead({ tenant, group, user: members[1]!, seq: 2 });
  }
  await fx.relay.drainAll();
  return { tenant, users, groups };
}

/** The comparable part of a list: conversation → unread, exactness, head seq. */
export function listShape(list: UserSessionPage): Record<string, { unread: number; exact: boolean; head: number | null }> {
  const out: Record<string, { unread: number; exact: boolean; head: number | null }> = {};
  for (const s of list.sessions) out[s.group] = { unread: s.unread, exact: s.unreadExact, head: s.head?.conversationSeq ?? null };
  return out;
}

/** Each user's list must hold exactly the groups they ever saw, with the engine's own summaries. */
export async function assertListsMatchEngine(fx: EngineFixture, stack: ProjectionStack, w: World): Promise<void> {
  for (const user of w.users) {
    const list = await stack.sessions.listSessions({ tenant: w.tenant, user, all: true });
    const expected: string[] = [];
    for (const group of w.groups) {
      const members = await fx.engine.listMembers({ tenant: w.tenant, group });
      if (members.members.some((m) => m.userId === user)) expected.push(group);
    }
    assert.deepEqual(list.sessions.map((s) => s.group).sort(), expected.sort(), `user ${user}'s conversation set`);
    for (const s of list.sessions) {
      const direct = await fx.engine.conversationSummary({ tenant: w.tenant, group: s.group, user });
      assert.equal(s.unread, direct.unread, `unread of ${user} in ${s.group}`);
      assert.equal(s.head?.conversationSeq, direct.head?.conversationSeq);
    }
  }
}

/**
 * Spec 000 acceptance 5: after the projection is cleared and a checkpoint falls behind the
 * retention window, users pulling their lists get the same conversation set and definitional
 * unread as before. Returns what happened for further checks.
 */
export async function acceptance5(fx: EngineFixture, makeAuthority: () => ConversationStateAuthority) {
  const first = newStack(fx, makeAuthority());
  await first.start();
  const w = await buildWorld(fx);
  await first.projector.catchUp();
  await first.registration.drainAll();
  await assertListsMatchEngine(fx, first, w);
  await first.stop();

  // while the consumer is down: more messages (their records will leave the window unread)
  for (const [i, group] of w.groups.entries()) {
    const { members } = await fx.engine.listMembers({ tenant: w.tenant, group });
    const sender = members.find((m) => m.state === "ACTIVE")!.userId;
    for (let m = 0; m <= i; m++) await fx.engine.send({ tenant: w.tenant, group, sender, text: `while down ${m}` });
  }
  await fx.relay.drainAll();
  const before = new Map<Uuid, ReturnType<typeof listShape>>();
  for (const user of w.users) before.set(user, listShape(await first.sessions.listSessions({ tenant: w.tenant, user, all: true })));

  // retention drops every record; the projection is lost entirely
  const dropped = (await fx.log.trim(Date.now() + 1)).reduce((a, b) => a + b, 0);
  assert.ok(dropped > 0, "the trim dropped records");
  for (const user of w.users) await first.sessions.wipeUser(w.tenant, user);
  const epochBefore = await first.epoch.get();

  const lines: string[] = [];
  const second = newStack(fx, makeAuthority(), lines);
  const report = await second.start();
  assert.equal(report.epochBumped, true);
  assert.equal(report.epoch, epochBefore + 1, "one bump for every partition together");
  assert.ok(report.audits.some((a) => a.verdict === "OVER_WINDOW"), "some partition was over the window");
  for (const a of report.audits.filter((x) => x.verdict === "OVER_WINDOW")) {
    assert.ok(lines.some((l) => l.includes(`partition ${a.partition} OVER_WINDOW`) && l.includes(`[${a.lost!.from}, ${a.lost!.to})`)), `log names partition ${a.partition}'s lost range`);
  }
  assert.ok(lines.some((l) => l.includes(`epoch bumped to ${epochBefore + 1}`)));
  const audits = await second.projector.audit();
  assert.deepEqual(audits.map((a) => a.verdict), audits.map(() => "OK"), "after start-up every checkpoint sits at the low watermark");

  for (const user of w.users) {
    const list = await second.sessions.listSessions({ tenant: w.tenant, user, all: true });
    assert.equal(list.rebuilt, true, "the first pull after the bump rebuilds");
    assert.deepEqual(listShape(list), before.get(user), `user ${user}: same set and unread as before`);
    const again = await second.sessions.listSessions({ tenant: w.tenant, user, all: true });
    assert.equal(again.rebuilt, false, "rebuilt once per epoch");
  }
  return { world: w, stack: second };
}

/**
 * A registration task killed (SIGKILL, a real child process) between the authority write and the
 * queue pop loses nothing and duplicates nothing visible: a new task writes the same items again,
 * the authority keeps one row per (user, conversation), the queues drain, and the rebuild drill
 * afterwards reports no difference.
 */
export async function registrationCrash(
  fx: EngineFixture,
  makeAuthority: () => ConversationStateAuthority,
  /** What the child's authority connects to: the same rows as makeAuthority's (JSON: no `now`). */
  childAuthority: "redis-hash" | Omit<CassandraOptions, "now">,
): Promise<void> {
  const authority = makeAuthority();
  const stack = newStack(fx, authority);
  await stack.start();
  const w = await buildWorld(fx, 5, 3);
  await stack.projector.catchUp();
  const queued = async () => {
    let n = 0;
    for (let b = 0; b < 256; b++) n += await fx.store.clientForKey(ucsPendingKey(fx.engine.keys, b)).llen(ucsPendingKey(fx.engine.keys, b));
    return n;
  };
  const pending = await queued();
  assert.ok(pending > 0, "registrations are pending");

  const child = spawn(process.execPath, [fileURLToPath(new URL("./registration-child.js", import.meta.url))], {
    env: { ...process.env, QIM_REGISTRATION_CHILD: JSON.stringify({ topology: fx.topology.config, keyPrefix: fx.engine.keys.prefix, authority: childAuthority }) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => { out += d.toString(); });
  const [code, signal] = await new Promise<[number | null, string | null]>((resolve) => child.on("exit", (c, s) => resolve([c, s])));
  assert.equal(signal, "SIGKILL", `the child died by SIGKILL (code ${code}, out ${out})`);
  const wrote = Number(/wrote (\d+)/.exec(out)?.[1]);
  assert.ok(wrote > 0, "it wrote a batch before dying");
  assert.equal(await queued(), pending, "nothing was popped: the killed task's batch is still queued");

  const written = await stack.registration.drainAll();
  assert.equal(written, pending, "the next task writes every queued item, the killed batch included");
  assert.equal(await queued(), 0);
  for (const user of w.users) {
    const rows = await authority.conversations(w.tenant, user);
    const ids = rows.map((r) => r.conversation);
    assert.equal(new Set(ids).size, ids.length, `one row per conversation for ${user}`);
    const list = await stack.sessions.listSessions({ tenant: w.tenant, user, all: true });
    assert.deepEqual(ids.sort(), list.sessions.map((s) => s.group).sort(), `the authority holds ${user}'s whole set`);
  }
  const report = await stack.drill.run({ users: w.users.map((user) => ({ tenant: w.tenant, user })), wipe: "both", by: "test" });
  assert.deepEqual(report.differences, []);
  assert.equal(report.ok, true);
  assert.equal(report.usersRebuilt, w.users.length);
  await stack.stop();
}

/**
 * The drill compares field by field: a clean run reports nothing; a row removed from the
 * authority makes it report that user and conversation ("presence", before true, after false).
 */
export async function drillCatchesCorruption(
  fx: EngineFixture,
  makeAuthority: () => ConversationStateAuthority,
  /** Sample users from the projection (only when every user in this Redis prefix shares the authority). */
  sample: boolean,
): Promise<void> {
  const authority = makeAuthority();
  const stack = newStack(fx, authority);
  await stack.start();
  const w = await buildWorld(fx, 4, 2);
  await stack.projector.catchUp();
  const progress: string[] = [];
  const who = sample ? { sample: 1000 } : { users: w.users.map((user) => ({ tenant: w.tenant, user })) };
  const clean = await stack.drill.run({ ...who, wipe: "projection", by: "test", onProgress: (p) => progress.push(p.phase) });
  assert.equal(clean.ok, true, JSON.stringify(clean.differences.slice(0, 3)));
  assert.ok(clean.users >= w.users.length, "the drill covers every user of the world");
  assert.ok(clean.conversationsBefore > 0);
  assert.equal(clean.conversationsAfter, clean.conversationsBefore);
  assert.equal(clean.epochAfter, clean.epochBefore + 1);
  for (const phase of ["prepare", "record", "wipe", "bump", "rebuild", "done"]) assert.ok(progress.includes(phase), phase);

  const victim = w.users[1]!;
  const [row] = await authority.conversations(w.tenant, victim);
  await authority.remove(w.tenant, victim, [row!.conversation]);
  const bad = await stack.drill.run({ users: [{ tenant: w.tenant, user: victim }], wipe: "projection", by: "test" });
  assert.equal(bad.ok, false);
  assert.deepEqual(bad.differences.map((d) => [d.user, d.conversation, d.field, d.before, d.after]), [[victim, row!.conversation, "presence", true, false]]);
  await stack.stop();
}
