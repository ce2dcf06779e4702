/**
 * Shared by the reliability (fault-injection) tests: a seeded PRNG, the soak switch, a ledger of
 * what the load was told (acknowledged, refused, failed), and the checks over the whole history
 * once the fault is over — the store, the dispatch log and the session projection, each replayed
 * and compared with what the clients were acknowledged.
 */
import {
  decodeHistoryEntry,
  LOG_START,
  membershipIdempotencyId,
  opCode,
  parseMemberValue,
  QimError,
  uuidToHex,
  type DispatchEntry,
  type DispatchLog,
  type DispatchRecord,
  type ConversationService,
  type LogPosition,
  type MemberState,
  type MembershipOpName,
  type Uuid,
} from "../../core/index.js";
import { checkConversation } from "../core/checker.js";
import { checkpointKey, fanoutKeys, userKeys } from "../../core/index.js";
import { newUuid } from "../../core/index.js";

/** QIM_SOAK=1: the long mode (more operations, more rounds); CI runs the short one. */
export const SOAK = process.env.QIM_SOAK === "1";

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export interface Rng {
  seed: number;
  /** [0, 1) */
  next(): number;
  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number;
  pick<T>(items: readonly T[]): T;
  chance(p: number): boolean;
}

/** mulberry32 seeded from QIM_SEED (to replay a run) or at random; the seed is printed by the tests. */
export function seededRng(seed = process.env.QIM_SEED ? Number(process.env.QIM_SEED) : Math.floor(Math.random() * 2 ** 32)): Rng {
  if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`QIM_SEED must be a non-negative integer, got ${process.env.QIM_SEED}`);
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    seed,
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: (items) => items[Math.floor(next() * items.length)]!,
    chance: (p) => next() < p,
  };
}

export interface GroupSpec {
  tenant: Uuid;
  group: Uuid;
  /** The owner and the members the group was created with (joined_at 0). */
  initialMembers: Uuid[];
}

/** A send the engine answered with a commit (new or duplicate): it must be in history exactly once. */
export interface AckedSend {
  group: Uuid;
  clientMessageId: Uuid;
  seq: number;
  messageId: Uuid | null;
}

/** A membership change the engine answered with an event (committed or duplicate). */
export interface AckedChange {
  group: Uuid;
  op: MembershipOpName;
  idempotencyId: string;
  seq: number;
  changed: Uuid[];
}

/**
 * What the load did, as its clients saw it. A call that failed with a store error is
 * unacknowledged: its effect may be lost or present. A domain refusal (not a member, membership
 * changed) is an acknowledged "no": nothing may have been written for it.
 */
export class Ledger {
  readonly sends: AckedSend[] = [];
  readonly changes: AckedChange[] = [];
  /** Sends refused by the engine (acknowledged refusals): their client_message_id must be absent. */
  readonly refusedSends: { group: Uuid; clientMessageId: Uuid; code: string }[] = [];
  /** Sends whose every attempt failed with a store error: present or absent, both allowed. */
  readonly unackedSends: { group: Uuid; clientMessageId: Uuid }[] = [];
  /** Membership calls whose every attempt failed with a store error. */
  unackedChanges = 0;
  /** Calls (any kind, any attempt) that failed with a store error. */
  failedCalls = 0;
  /** Retries of a failed call with the same idempotency key that were then acknowledged. */
  ackedAfterRetry = 0;
  noopChanges = 0;
  /** Errors that are neither a store failure nor an expected refusal: each is a finding. */
  readonly unexpected: string[] = [];

  get acknowledged(): number {
    return this.sends.length + this.changes.length + this.noopChanges + this.refusedSends.length;
  }
}

/** A domain refusal the load expects (acknowledged, nothing written), as opposed to a store failure. */
export function isRefusal(err: unknown): err is QimError {
  return err instanceof QimError && (err.code === "PERMISSION_DENIED" || err.code === "MEMBERSHIP_CHANGED");
}

/**
 * Store failures are unacknowledged; QimErrors other than the expected refusals are findings, but
 * UNAVAILABLE (a write no replica confirmed in time, issue 26) is a store failure the client retries.
 */
export function isStoreFailure(err: unknown): boolean {
  return !(err instanceof QimError) || err.code === "UNAVAILABLE";
}

/** Every dispatch-log entry of every partition, partition by partition in offset order. */
export async function readWholeLog(log: DispatchLog): Promise<DispatchEntry[][]> {
  const out: DispatchEntry[][] = [];
  for (let p = 0; p < log.identity.partitionCount; p++) {
    const part: DispatchEntry[] = [];
    let from: LogPosition = LOG_START;
    for (;;) {
      const { entries } = await log.readFrom(p, from, 1000);
      if (entries.length === 0) break;
      part.push(...entries);
      const last = entries[entries.length - 1]!;
      from = { offset: last.offset + 1, id: last.id };
    }
    out.push(part);
  }
  return out;
}

export interface VerifyReport {
  violations: string[];
  groups: number;
  historyEntries: number;
  messages: number;
  events: number;
  dispatchRecords: number;
  /** Dispatch records beyond the first per (conversation, seq): at-least-once re-appends. */
  duplicateDispatches: number;
  unackedSendsPresent: number;
  unackedSendsAbsent: number;
}

const sortedIds = (ids: Iterable<string>) => [...ids].sort().join(",");

interface ReplayedMember {
  joinedAt: number;
  leftAt: number | null;
  state: MemberState;
}

/**
 * The whole-history check of every group against the ledger. The invariants, as the tests state
 * them:
 *
 * - **history is exactly once**: seqs 1..cseq each hold one entry whose own seq matches; every
 *   idempotency entry points at a distinct existing seq and there is one per commit; every
 *   acknowledged send is at its seq with its message id; a refused send left no idempotency entry;
 * - **the dispatch log is at least once**: the relay appends before it marks a commit COMMITTED,
 *   so a crash in between appends again (consumers dedupe by (conversation, seq)); every history
 *   entry is in the log, duplicates carry identical content (entry, version, recipients), and the
 *   deduplicated records pass checkConversation (no gap, version +1 per event, audience = members
 *   at seq) with no violation;
 * - **one control message per acknowledged change**: replaying the control messages gives each
 *   event's idempotency id (at the version before it); each id occurs once, the idempotency index
 *   maps it to that seq, and each acknowledged change is there with its op and users;
 * - **member table = replay**: joined_at/left_at/state per user, the version and member count
 *   equal what replaying the events from the initial members gives.
 */
export async function verifyGroups(engine: ConversationService, log: DispatchLog, specs: GroupSpec[], ledger: Ledger, wholeLog?: DispatchEntry[][]): Promise<VerifyReport> {
  const violations: string[] = [];
  const report: VerifyReport = {
    violations, groups: specs.length, historyEntries: 0, messages: 0, events: 0, dispatchRecords: 0, duplicateDispatches: 0,
    unackedSendsPresent: 0, unackedSendsAbsent: 0,
  };
  const entries = (wholeLog ?? await readWholeLog(log)).flat();
  report.dispatchRecords = entries.length;
  const byConversation = new Map<string, DispatchRecord[]>();
  for (const e of entries) {
    const id = `${e.record.tenant}|${e.record.conversation}`;
    const list = byConversation.get(id);
    if (list) list.push(e.record); else byConversation.set(id, [e.record]);
  }
  const known = new Set(specs.map((s) => `${s.tenant}|${s.group}`));
  for (const id of byConversation.keys()) if (!known.has(id)) violations.push(`the dispatch log holds records of an unknown conversation ${id}`);

  for (const spec of specs) {
    const { tenant, group } = spec;
    const where = `group ${group}`;
    const k = engine.conversationKeys(tenant, group);
    const client = engine.store.clientFor(k.tag);
    const res = await client.multi().zrange(k.hist, "0", "-1", "WITHSCORES").hgetall(k.idem).hgetall(k.grpmembers).hgetall(k.grpmeta).get(k.cseq).exec();
    const flat = res![0]![1] as string[];
    const idem = res![1]![1] as Record<string, string>;
    const table = res![2]![1] as Record<string, string>;
    const meta = res![3]![1] as Record<string, string>;
    const cseq = Number((res![4]![1] as string | null) ?? 0);

    // history: exactly one entry per seq 1..cseq
    const hist = new Map<number, string>();
    for (let i = 0; i < flat.length; i += 2) {
      const seq = Number(flat[i + 1]);
      if (hist.has(seq)) violations.push(`${where}: history holds two entries at seq ${seq}`);
      hist.set(seq, flat[i]!);
    }
    report.historyEntries += hist.size;
    if (hist.size !== cseq) violations.push(`${where}: history holds ${hist.size} entries, cseq is ${cseq}`);
    const messageIds = new Set<string>();
    for (let s = 1; s <= cseq; s++) {
      const entry = hist.get(s);
      if (entry === undefined) { violations.push(`${where}: no history entry at seq ${s}`); continue; }
      const rec = decodeHistoryEntry(entry);
      if (rec.conversationSeq !== s) violations.push(`${where}: the entry at seq ${s} says seq ${rec.conversationSeq}`);
      if (messageIds.has(rec.messageId)) violations.push(`${where}: message id ${rec.messageId} twice in history`);
      messageIds.add(rec.messageId);
    }
    // idempotency index: one entry per commit, each at a distinct existing seq
    // an entry is "seq|V|contentDigest" (or "seq" alone, written before issue 24): its seq leads
    const seqOf = (entry: string) => Number(entry.split("|")[0]);
    const idemSeqs = Object.values(idem).map(seqOf);
    if (idemSeqs.length !== cseq) violations.push(`${where}: ${idemSeqs.length} idempotency entries for ${cseq} commits`);
    if (new Set(idemSeqs).size !== idemSeqs.length) violations.push(`${where}: two idempotency entries point at one seq`);
    for (const s of idemSeqs) if (!hist.has(s)) violations.push(`${where}: an idempotency entry points at seq ${s}, which is not in history`);

    // acknowledged and refused sends
    for (const a of ledger.sends.filter((x) => x.group === group)) {
      const at = idem[uuidToHex(a.clientMessageId)];
      if (at === undefined) { violations.push(`${where}: acknowledged send ${a.clientMessageId} (seq ${a.seq}) is missing`); continue; }
      if (seqOf(at) !== a.seq) violations.push(`${where}: acknowledged send ${a.clientMessageId} at seq ${a.seq}, the index says ${at}`);
      const entry = hist.get(a.seq);
      if (!entry) { violations.push(`${where}: acknowledged seq ${a.seq} is not in history`); continue; }
      const rec = decodeHistoryEntry(entry);
      if (rec.kind !== "normal") violations.push(`${where}: acknowledged send at seq ${a.seq} is a ${rec.kind} entry`);
      if (a.messageId !== null && rec.messageId !== a.messageId) violations.push(`${where}: seq ${a.seq} holds message ${rec.messageId}, acknowledged was ${a.messageId}`);
    }
    for (const r of ledger.refusedSends.filter((x) => x.group === group)) {
      if (idem[uuidToHex(r.clientMessageId)] !== undefined) violations.push(`${where}: refused send ${r.clientMessageId} (${r.code}) was written at seq ${idem[uuidToHex(r.clientMessageId)]}`);
    }
    for (const u of ledger.unackedSends.filter((x) => x.group === group)) {
      if (idem[uuidToHex(u.clientMessageId)] !== undefined) report.unackedSendsPresent++; else report.unackedSendsAbsent++;
    }

    // replay the control messages: idempotency ids, member table, version
    const members = new Map<Uuid, ReplayedMember>();
    for (const m of spec.initialMembers) members.set(m, { joinedAt: 0, leftAt: null, state: "ACTIVE" });
    let version = 1;
    const eventAt = new Map<string, number[]>();
    const events = new Map<number, { op: number; users: Uuid[] }>();
    for (let s = 1; s <= cseq; s++) {
      const entry = hist.get(s);
      if (!entry) continue;
      const rec = decodeHistoryEntry(entry);
      if (!rec.membership) { report.messages++; continue; }
      report.events++;
      const { op, actor, users } = rec.membership;
      const id = Buffer.from(membershipIdempotencyId({ tenant, group, op, actor, version, targets: users })).toString("hex");
      eventAt.set(id, [...(eventAt.get(id) ?? []), s]);
      events.set(s, { op, users });
      if (idem[id] !== String(s)) violations.push(`${where}: the event at seq ${s} has idempotency id ${id}, the index maps it to ${idem[id]}`);
      for (const u of users) {
        const m = members.get(u);
        if (op === 1) members.set(u, { joinedAt: s - 1, leftAt: null, state: "ACTIVE" });
        else members.set(u, { joinedAt: m?.joinedAt ?? -1, leftAt: s, state: op === 2 ? "LEFT" : "REMOVED" });
      }
      version++;
    }
    for (const [id, seqs] of eventAt) if (seqs.length > 1) violations.push(`${where}: idempotency id ${id} has ${seqs.length} control messages (seqs ${seqs.join(", ")})`);
    for (const c of ledger.changes.filter((x) => x.group === group)) {
      const seqs = eventAt.get(c.idempotencyId) ?? [];
      if (seqs.length !== 1 || seqs[0] !== c.seq) {
        violations.push(`${where}: acknowledged ${c.op} ${c.idempotencyId} at seq ${c.seq} has control messages at [${seqs.join(", ")}]`);
        continue;
      }
      const ev = events.get(c.seq)!;
      if (ev.op !== opCode(c.op) || sortedIds(ev.users) !== sortedIds(c.changed)) {
        violations.push(`${where}: the event at seq ${c.seq} is op ${ev.op} of [${sortedIds(ev.users)}], acknowledged was ${c.op} of [${sortedIds(c.changed)}]`);
      }
    }
    const stored = new Map(Object.entries(table).map(([u, v]) => { const m = parseMemberValue(u, v); return [m.userId, m] as const; }));
    for (const u of new Set([...members.keys(), ...stored.keys()])) {
      const want = members.get(u);
      const got = stored.get(u);
      if (!want || !got || want.joinedAt !== got.joinedAt || want.leftAt !== got.leftAt || want.state !== got.state) {
        violations.push(`${where}: member ${u} is ${got ? `${got.joinedAt}|${got.leftAt ?? ""}|${got.state}` : "absent"} in the table, the events give ${want ? `${want.joinedAt}|${want.leftAt ?? ""}|${want.state}` : "absent"}`);
      }
    }
    if (Number(meta.version) !== version) violations.push(`${where}: member version ${meta.version}, the events give ${version}`);
    const active = [...members.values()].filter((m) => m.state === "ACTIVE").length;
    if (Number(meta.member_count) !== active) violations.push(`${where}: member_count ${meta.member_count}, the events give ${active}`);

    // dispatch log: at least once, identical duplicates, every history entry, then the checker.
    // A fanout job's seq (issue 22) has several records, one per chunk: a duplicate is the same
    // chunk again; the checker takes the union of a seq's chunks as its audience.
    const records = byConversation.get(`${tenant}|${group}`) ?? [];
    const byChunk = new Map<string, DispatchRecord>();
    const bySeq = new Map<number, DispatchRecord>();
    for (const r of records) {
      const key = `${r.conversationSeq}|${r.chunk}`;
      const first = byChunk.get(key);
      if (!first) {
        byChunk.set(key, r);
        if (!bySeq.has(r.conversationSeq)) bySeq.set(r.conversationSeq, r);
        continue;
      }
      report.duplicateDispatches++;
      if (first.entry !== r.entry || first.version !== r.version || sortedIds(first.recipients) !== sortedIds(r.recipients)) {
        violations.push(`${where}: seq ${r.conversationSeq} chunk ${r.chunk} dispatched twice with different content (version ${first.version}/${r.version}, ${first.recipients.length}/${r.recipients.length} recipients)`);
      }
    }
    for (let s = 1; s <= cseq; s++) {
      const r = bySeq.get(s);
      if (!r) violations.push(`${where}: committed seq ${s} is missing from the dispatch log`);
      else if (r.entry !== hist.get(s)) violations.push(`${where}: the dispatch record of seq ${s} differs from its history entry`);
    }
    for (const s of bySeq.keys()) if (s > cseq) violations.push(`${where}: seq ${s} dispatched beyond cseq ${cseq}`);
    const checked = checkConversation(spec.initialMembers, [...byChunk.values()]);
    violations.push(...checked.violations.map((v) => `${where}: ${v}`));
  }
  return report;
}

/**
 * The session projection against the log: each user's `convs` holds exactly the conversations
 * the user was a recipient of in some dispatch record (every recipient's conversation, nothing
 * else).
 */
export async function verifyProjection(engine: ConversationService, tenant: Uuid, users: Uuid[], wholeLog: DispatchEntry[][]): Promise<string[]> {
  const violations: string[] = [];
  const expected = new Map<Uuid, Set<string>>(users.map((u) => [u, new Set()]));
  for (const e of wholeLog.flat()) {
    if (e.record.tenant !== tenant) continue;
    for (const r of e.record.recipients) {
      const set = expected.get(r);
      if (!set) violations.push(`record ${e.record.conversation}#${e.record.conversationSeq} names an unknown recipient ${r}`);
      else set.add(uuidToHex(e.record.conversation));
    }
  }
  for (const user of users) {
    const k = userKeys(engine.keys, tenant, user);
    const got = new Set(await engine.store.clientFor(k.tag).zrange(k.convs, "0", "-1"));
    const want = expected.get(user)!;
    for (const c of want) if (!got.has(c)) violations.push(`user ${user}: conversation ${c} (a recipient of its records) is missing from the projection`);
    for (const c of got) if (!want.has(c)) violations.push(`user ${user}: conversation ${c} is in the projection but the user received none of its records`);
  }
  return violations;
}

/**
 * The relay's rule "nothing is marked COMMITTED that is not in the log (or in a fanout job)":
 * every seq of every group that is no longer RECORDED (neither in vpending nor in commits) has a
 * dispatch record or a fanout job in its bucket's queue (issue 22). Read with the relay stopped;
 * commits made meanwhile are RECORDED atomically with their seq, so they pass.
 */
export async function verifyMarkedAreLogged(engine: ConversationService, specs: GroupSpec[], wholeLog: DispatchEntry[][]): Promise<{ violations: string[]; marked: number; recorded: number; inJobs: number }> {
  const violations: string[] = [];
  const logged = new Set(wholeLog.flat().map((e) => `${e.record.conversation}|${e.record.conversationSeq}`));
  let marked = 0;
  let recorded = 0;
  let inJobs = 0;
  for (const { tenant, group } of specs) {
    const k = engine.conversationKeys(tenant, group);
    const res = await engine.store.clientFor(k.tag).multi().get(k.cseq).zrange(k.vpending, "0", "-1").hkeys(k.commits).lrange(fanoutKeys(engine.keys, k.bucket).fanoutJobs, 0, -1).exec();
    const cseq = Number((res![0]![1] as string | null) ?? 0);
    const pending = new Set([...(res![1]![1] as string[]), ...(res![2]![1] as string[])].map(Number));
    const jobs = new Set((res![3]![1] as string[]).filter((j) => j.startsWith(`${k.outboxRef}|`)).map((j) => Number(j.slice(k.outboxRef.length + 1))));
    for (let s = 1; s <= cseq; s++) {
      if (pending.has(s)) { recorded++; continue; }
      marked++;
      if (jobs.has(s)) { inJobs++; continue; }
      if (!logged.has(`${group}|${s}`)) violations.push(`group ${group}: seq ${s} is marked COMMITTED but neither in the dispatch log nor in a fanout job`);
    }
  }
  return { violations, marked, recorded, inJobs };
}

export interface PartitionCheck {
  partition: number;
  checkpoint: number | null;
  high: number;
  /** Records [0, projectedPrefix) have every recipient's conversation in the projection. */
  projectedPrefix: number;
}

/**
 * Per partition: the checkpoint is at most the high watermark, its stream id is the id of the
 * record just before its offset, and it is not ahead of what was written — every record before
 * it has all its recipients' conversations in `convs` (checkpoint ≤ the projected prefix).
 */
export async function verifyCheckpoints(engine: ConversationService, log: DispatchLog, wholeLog: DispatchEntry[][]): Promise<{ violations: string[]; partitions: PartitionCheck[] }> {
  const violations: string[] = [];
  const partitions: PartitionCheck[] = [];
  const convsCache = new Map<string, Set<string>>();
  const convsOf = async (tenant: Uuid, user: Uuid) => {
    const id = `${tenant}|${user}`;
    let set = convsCache.get(id);
    if (!set) {
      const k = userKeys(engine.keys, tenant, user);
      set = new Set(await engine.store.clientFor(k.tag).zrange(k.convs, "0", "-1"));
      convsCache.set(id, set);
    }
    return set;
  };
  for (let p = 0; p < log.identity.partitionCount; p++) {
    const key = checkpointKey(engine.keys, log.identity.topicId, p);
    const pos = await engine.store.clientForKey(key).hget(key, "pos");
    const w = await log.watermarks(p);
    const part = wholeLog[p] ?? [];
    let prefix = 0;
    for (const e of part) {
      let all = true;
      for (const r of e.record.recipients) if (!(await convsOf(e.record.tenant, r)).has(uuidToHex(e.record.conversation))) { all = false; break; }
      if (!all) break;
      prefix++;
    }
    let checkpoint: number | null = null;
    if (pos !== null) {
      const cut = pos.indexOf("|");
      checkpoint = Number(pos.slice(0, cut));
      const id = pos.slice(cut + 1);
      if (checkpoint > w.high) violations.push(`partition ${p}: checkpoint ${checkpoint} is beyond the high watermark ${w.high}`);
      const before = checkpoint === 0 ? "0-0" : part[checkpoint - 1]?.id;
      if (id !== before) violations.push(`partition ${p}: checkpoint ${checkpoint} stores stream id ${id}, the record before that offset is ${before}`);
      if (checkpoint > prefix) violations.push(`partition ${p}: checkpoint ${checkpoint} is ahead of what was projected (records [0, ${prefix}) have every recipient written)`);
    }
    if (part.length !== w.high - w.low) violations.push(`partition ${p}: read ${part.length} records, the watermarks say [${w.low}, ${w.high})`);
    partitions.push({ partition: p, checkpoint, high: w.high, projectedPrefix: prefix });
  }
  return { violations, partitions };
}

/** The users and groups of a load: per group an owner and two core senders, plus a churn pool shared by all groups. */
export interface World {
  tenant: Uuid;
  specs: GroupSpec[];
  /** Per group: the users who stay members (owner first). */
  core: Map<Uuid, Uuid[]>;
  churn: Uuid[];
  users: Uuid[];
}

/** `log`: when given, group ids are drawn so that the groups cover the log's partitions round-robin. */
export async function buildLoadWorld(engine: ConversationService, rng: Rng, groups: number, churnSize: number, log?: DispatchLog): Promise<World> {
  const tenant = newUuid();
  const churn = Array.from({ length: churnSize }, () => newUuid());
  const specs: GroupSpec[] = [];
  const core = new Map<Uuid, Uuid[]>();
  const users = [...churn];
  for (let g = 0; g < groups; g++) {
    const own = [newUuid(), newUuid(), newUuid()];
    users.push(...own);
    const initial = [...own, ...churn.filter(() => rng.chance(0.5))];
    let id = newUuid();
    while (log && log.partitionOf(tenant, id) !== g % log.identity.partitionCount) id = newUuid();
    const { group } = await engine.createGroup({ tenant, group: id, owner: own[0]!, members: initial.slice(1) });
    specs.push({ tenant, group, initialMembers: initial });
    core.set(group, own);
  }
  return { tenant, specs, core, churn, users };
}

export interface LoadOptions {
  sendersPerGroup: number;
  /** Upper bounds; a worker also stops when `stop()` says so. */
  sendsPerWorker: number;
  changesPerGroup: number;
  stop?: () => boolean;
  /** Pause between two operations of one worker, in ms (0: none). */
  pauseMs?: [number, number];
  /** Attempts per operation (same idempotency key) while the store fails. */
  attempts?: number;
}

/**
 * One call with the client's retry policy: a store failure is retried with the same idempotency
 * key (sometimes: the rest stay unacknowledged), a refusal is final, anything else is a finding.
 */
async function call<T>(ledger: Ledger, rng: Rng, attempts: number, what: string, fn: () => Promise<T>): Promise<{ ok: T } | { refused: QimError } | { failed: true }> {
  for (let attempt = 1; ; attempt++) {
    try {
      const ok = await fn();
      if (attempt > 1) ledger.ackedAfterRetry++;
      return { ok };
    } catch (err) {
      if (isRefusal(err)) return { refused: err };
      if (!isStoreFailure(err)) {
        ledger.unexpected.push(`${what}: ${(err as Error).name}: ${(err as Error).message}`);
        return { failed: true };
      }
      ledger.failedCalls++;
      await sleep(rng.int(20, 80));
      if (attempt >= attempts || !rng.chance(0.6)) return { failed: true };
    }
  }
}

/**
 * The mixed load: per group `sendersPerGroup` senders (mostly core members, sometimes a churn user
 * who may not be a member) and one membership worker (add / remove / leave of churn users), all
 * concurrent, every outcome in the ledger.
 */
export async function runLoad(engine: ConversationService, world: World, ledger: Ledger, rng: Rng, opts: LoadOptions): Promise<void> {
  const attempts = opts.attempts ?? 4;
  const stopped = () => opts.stop?.() ?? false;
  const pause = async () => { if (opts.pauseMs) await sleep(rng.int(opts.pauseMs[0], opts.pauseMs[1])); };
  const workers: Promise<void>[] = [];
  for (const spec of world.specs) {
    const { tenant, group } = spec;
    const core = world.core.get(group)!;
    for (let s = 0; s < opts.sendersPerGroup; s++) {
      workers.push((async () => {
        for (let i = 0; i < opts.sendsPerWorker && !stopped(); i++) {
          const sender = rng.chance(0.8) ? rng.pick(core) : rng.pick(world.churn);
          const clientMessageId = newUuid();
          const r = await call(ledger, rng, attempts, "send", () => engine.send({ tenant, group, sender, text: `m${s}.${i}`, clientMessageId }));
          if ("ok" in r) ledger.sends.push({ group, clientMessageId, seq: r.ok.conversationSeq, messageId: r.ok.messageId });
          else if ("refused" in r) ledger.refusedSends.push({ group, clientMessageId, code: r.refused.code });
          else ledger.unackedSends.push({ group, clientMessageId });
          await pause();
        }
      })());
    }
    workers.push((async () => {
      for (let i = 0; i < opts.changesPerGroup && !stopped(); i++) {
        const roll = rng.next();
        const users = [...new Set([rng.pick(world.churn), ...(rng.chance(0.3) ? [rng.pick(world.churn)] : [])])];
        const op = roll < 0.45 ? "join" : roll < 0.9 ? "remove" : "leave";
        const r = await call(ledger, rng, attempts, op, () =>
          op === "join" ? engine.addMembers({ tenant, group, users })
            : op === "remove" ? engine.removeMembers({ tenant, group, users })
              : engine.leaveGroup({ tenant, group, user: users[0]! }));
        if ("ok" in r) {
          const c = r.ok;
          if (c.outcome === "noop") ledger.noopChanges++;
          else if (c.eventConversationSeq === null) ledger.unexpected.push(`${op}: outcome ${c.outcome} without an event seq`);
          else ledger.changes.push({ group, op: c.op, idempotencyId: c.idempotencyId, seq: c.eventConversationSeq, changed: c.changed });
        } else if ("refused" in r) {
          ledger.unexpected.push(`${op}: refused ${r.refused.code}: ${r.refused.message}`);
        } else {
          ledger.unackedChanges++;
        }
        await pause();
      }
    })());
  }
  await Promise.all(workers);
}
