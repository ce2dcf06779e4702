import { randomInt } from "node:crypto";
import type { KeySpace } from "../base/index.js";
import type { RedisStore } from "../store/index.js";
import { convsPattern, drillLockKey } from "./keys.js";
import { releaseLockScript } from "./scripts.js";
import { FailedPreconditionError, InvalidArgumentError, MAX_DRILL_USERS } from "../base/index.js";
import { hexToUuid, newMessageId, parseUuid, type Uuid } from "../base/index.js";
import type { SessionProjector } from "./consumer.js";
import type { RegistrationTask } from "./registration.js";
import type { UserSessionPage, UserSessionProjection } from "./sessions.js";

export type DrillWipe = "projection" | "checkpoints" | "both";

export interface DrillUser {
  tenant: Uuid;
  user: Uuid;
}

export interface DrillOptions {
  /** Users to check; when absent, `sample` users are drawn at random from the projection. */
  users?: { tenant: string; user: string }[];
  sample?: number;
  wipe: DrillWipe;
  /** Who runs it (the epoch log records it). */
  by: string;
  reason?: string;
  onProgress?: (p: DrillProgress) => void;
  /**
   * A check of a module built above the projection, run after the rebuild (the conversation
   * list: its cached unread, mentions and badge against the definition). The projection cannot
   * import those modules; whoever runs the drill passes it in.
   */
  compare?: DrillComparator;
}

/** What a DrillComparator found for one user: rows it compared and the fields that differ. */
export interface DrillCheck {
  compared: number;
  differences: DrillDifference[];
}

export interface DrillComparator {
  /** Once before the users are compared: bring the module's state up to what the log holds (every node's, in a cluster). */
  settle(): Promise<void>;
  check(u: DrillUser): Promise<DrillCheck>;
}

export type DrillPhase = "prepare" | "record" | "wipe" | "bump" | "rebuild" | "compare" | "done";

export interface DrillProgress {
  phase: DrillPhase;
  done: number;
  total: number;
  message: string;
}

/**
 * One field that differs, for one user and conversation. The projection's fields compare before
 * the wipe with after the rebuild; the conversation list's (`list*`, `badge*`, from the
 * comparator) compare the cached value (before) with the definitional one (after); a badge
 * field has no conversation ("").
 */
export interface DrillDifference {
  tenant: Uuid;
  user: Uuid;
  conversation: Uuid | "";
  /** presence: in the set before and not after (before true) or the reverse. */
  field: "presence" | "unread" | "unreadExact" | "headConversationSeq" | "lastActivityId"
    | "listPresence" | "listUnread" | "listUnreadExact" | "listMentions" | "badgeTotalUnread" | "badgeTotalMention" | "badgeMutedUnread";
  before: string | number | boolean | null;
  after: string | number | boolean | null;
}

/** One user the drill checked: how many conversations they had before and after, and whether their list was rebuilt. */
export interface DrillUserResult {
  tenant: Uuid;
  user: Uuid;
  conversationsBefore: number;
  conversationsAfter: number;
  rebuilt: boolean;
}

export interface DrillReport {
  drillId: Uuid;
  startedAt: string;
  finishedAt: string;
  wipe: DrillWipe;
  /** "projection" wipes the sampled users' projection and epoch marks; "checkpoints" every partition's checkpoint. */
  scope: string;
  users: number;
  conversationsBefore: number;
  conversationsAfter: number;
  epochBefore: number;
  epochAfter: number;
  /** Pending registrations written to the authority before recording (so it holds every set). */
  registrationsFlushed: number;
  /** Users whose list was merged back from the authority on their pull after the bump. */
  usersRebuilt: number;
  authority: string;
  /** Every user checked, in the order they were checked (a CI report has one test case each). */
  checkedUsers: DrillUserResult[];
  /** Conversation-list rows the comparator checked against the definition (0 without one). */
  listRowsCompared: number;
  differences: DrillDifference[];
  ok: boolean;
}

interface Snapshot {
  [conversation: string]: { unread: number; unreadExact: boolean; headConversationSeq: number | null; lastActivityId: string | null };
}

function snapshot(list: UserSessionPage): Snapshot {
  const out: Snapshot = {};
  for (const s of list.sessions) {
    out[s.group] = { unread: s.unread, unreadExact: s.unreadExact, headConversationSeq: s.head?.conversationSeq ?? null, lastActivityId: s.head?.messageId ?? null };
  }
  return out;
}

/** A drill holds its lock at most this long (a crashed drill's lock expires by itself). */
const DRILL_LOCK_MS = 30 * 60 * 1000;

/**
 * `qimctl drill rebuild` (DESIGN: what CI runs): record sampled users' conversation sets and
 * per-conversation definitional unread, wipe what it is told to, bump the epoch, let each user's
 * list be rebuilt on its pull, and compare field by field. Run it on a quiet system: messages
 * arriving during the drill change unread counts and show up as differences. Only `projection`
 * (or `both` once the log no longer holds the users' records) tests the authority: after a
 * checkpoint wipe the consumer replays what the log still retains into the projection, which
 * brings back a conversation even when its authority row is missing.
 */
export class RebuildDrill {
  constructor(
    private readonly store: RedisStore,
    private readonly keys: KeySpace,
    private readonly sessions: UserSessionProjection,
    private readonly projector: SessionProjector,
    private readonly registration: RegistrationTask,
  ) {}

  /** Up to `n` users drawn at random from the projection (SCAN over every data node; drills only). */
  async sampleUsers(n: number): Promise<DrillUser[]> {
    const pattern = convsPattern(this.keys);
    const re = /:convs:([0-9a-f]{32}):([0-9a-f]{32})$/;
    const sample: DrillUser[] = [];
    let seen = 0;
    for (const node of this.store.dataNodes()) {
      let cursor = "0";
      do {
        const [next, keys] = await node.scan(cursor, "MATCH", pattern, "COUNT", 1000);
        cursor = next;
        for (const key of keys) {
          const m = re.exec(key);
          if (!m) continue;
          const u = { tenant: hexToUuid(m[1]!), user: hexToUuid(m[2]!) };
          // reservoir sampling: every user has the same chance whatever the key order
          seen++;
          if (sample.length < n) sample.push(u);
          else {
            const j = randomInt(seen);
            if (j < n) sample[j] = u;
          }
        }
      } while (cursor !== "0");
    }
    return sample;
  }

  async run(opts: DrillOptions): Promise<DrillReport> {
    const drillId = newMessageId();
    const startedAt = new Date().toISOString();
    const progress = (phase: DrillPhase, done: number, total: number, message: string) => opts.onProgress?.({ phase, done, total, message });
    if (!["projection", "checkpoints", "both"].includes(opts.wipe)) {
      throw new InvalidArgumentError("wipe", `wipe must be projection, checkpoints or both, got ${JSON.stringify(String(opts.wipe).slice(0, 32))}`);
    }
    let users: DrillUser[];
    if (opts.users && opts.users.length > 0) {
      if (opts.users.length > MAX_DRILL_USERS) throw new InvalidArgumentError("users", `at most ${MAX_DRILL_USERS} users per drill`);
      users = opts.users.map((u, i) => ({ tenant: parseUuid(u.tenant, `users[${i}].tenant`), user: parseUuid(u.user, `users[${i}].user`) }));
    } else {
      const n = opts.sample ?? 100;
      if (!Number.isSafeInteger(n) || n < 1 || n > MAX_DRILL_USERS) throw new InvalidArgumentError("sample", `sample must be an integer from 1 to ${MAX_DRILL_USERS}`);
      users = await this.sampleUsers(n);
    }

    // one drill at a time across every server of this engine: two would wipe each other's users
    const lockKey = drillLockKey(this.keys);
    const lockClient = this.store.clientForKey(lockKey);
    if ((await lockClient.set(lockKey, drillId, "PX", DRILL_LOCK_MS, "NX")) !== "OK") {
      const holder = await lockClient.get(lockKey);
      throw new FailedPreconditionError(`another rebuild drill is running (${holder ?? "just finished"}); try again when it is done`, { runningDrill: holder });
    }
    try {
      return await this.runLocked(drillId, startedAt, users, opts, progress);
    } finally {
      await releaseLockScript.run(lockClient, { lock: lockKey }, { token: drillId }).catch(() => {});
    }
  }

  /**
   * Waits until every partition's checkpoint is at its high watermark and every registration
   * queue is empty: in a cluster the other nodes do the work on the partitions and user slots
   * they own (catchUp and drainAll here cover only this node's), and a queue still holding a
   * registration would read as a missing conversation. Gives up after DRILL_SETTLE_MS; the
   * comparison then shows what was not settled.
   */
  private async settle(): Promise<void> {
    const deadline = Date.now() + DRILL_SETTLE_MS;
    for (;;) {
      const [audits, depths] = await Promise.all([this.projector.audit(), this.registration.depthPerInstance()]);
      if (audits.every((a) => a.lag === 0) && depths.every((d) => d.depth === 0)) return;
      if (Date.now() > deadline) return;
      await new Promise((r) => setTimeout(r, 100));
      await this.projector.catchUp();
      await this.registration.drainAll();
    }
  }

  private async runLocked(drillId: Uuid, startedAt: string, users: DrillUser[], opts: DrillOptions,
    progress: (phase: DrillPhase, done: number, total: number, message: string) => void): Promise<DrillReport> {
    progress("prepare", 0, 2, "catching the projection up and flushing pending registrations");
    await this.projector.catchUp();
    progress("prepare", 1, 2, "flushing pending registrations to the authority");
    const registrationsFlushed = await this.registration.drainAll();
    await this.settle();
    progress("prepare", 2, 2, `flushed ${registrationsFlushed} registrations`);

    const before = new Map<string, Snapshot>();
    let conversationsBefore = 0;
    for (const [i, u] of users.entries()) {
      const list = await this.sessions.listSessions({ tenant: u.tenant, user: u.user, all: true });
      const snap = snapshot(list);
      before.set(`${u.tenant}|${u.user}`, snap);
      conversationsBefore += Object.keys(snap).length;
      progress("record", i + 1, users.length, `recorded ${u.user}`);
    }
    const epochBefore = await this.sessions.epoch.get();

    if (opts.wipe === "projection" || opts.wipe === "both") {
      for (const [i, u] of users.entries()) {
        await this.sessions.wipeUser(u.tenant, u.user);
        progress("wipe", i + 1, users.length, `wiped the projection of ${u.user}`);
      }
    }
    if (opts.wipe === "checkpoints" || opts.wipe === "both") {
      await this.projector.wipeCheckpoints();
      progress("wipe", users.length, users.length, "wiped every partition's checkpoint");
    }

    await this.sessions.epoch.bump(`drill rebuild ${drillId}${opts.reason ? `: ${opts.reason}` : ""}`, opts.by);
    progress("bump", 1, 1, "epoch bumped");
    if (opts.wipe !== "projection") {
      await this.projector.catchUp();
      await this.settle();
    }

    const differences: DrillDifference[] = [];
    const checkedUsers: DrillUserResult[] = [];
    let conversationsAfter = 0;
    let usersRebuilt = 0;
    for (const [i, u] of users.entries()) {
      const list = await this.sessions.listSessions({ tenant: u.tenant, user: u.user, all: true });
      if (list.rebuilt) usersRebuilt++;
      const after = snapshot(list);
      const was = before.get(`${u.tenant}|${u.user}`)!;
      conversationsAfter += Object.keys(after).length;
      checkedUsers.push({ tenant: u.tenant, user: u.user, conversationsBefore: Object.keys(was).length, conversationsAfter: Object.keys(after).length, rebuilt: list.rebuilt });
      differences.push(...compare(u, was, after));
      progress("rebuild", i + 1, users.length, `rebuilt and compared ${u.user}`);
    }
    let listRowsCompared = 0;
    if (opts.compare) {
      progress("compare", 0, users.length, "waiting until the conversation list has written what the log holds");
      await opts.compare.settle();
      for (const [i, u] of users.entries()) {
        const check = await opts.compare.check(u);
        listRowsCompared += check.compared;
        differences.push(...check.differences);
        progress("compare", i + 1, users.length, `compared the conversation list of ${u.user}`);
      }
    }
    const epochAfter = await this.sessions.epoch.get();
    progress("done", users.length, users.length, differences.length === 0 ? "no difference" : `${differences.length} differences`);
    return {
      drillId,
      startedAt,
      finishedAt: new Date().toISOString(),
      wipe: opts.wipe,
      scope: { projection: "the sampled users' projection", checkpoints: "every partition's checkpoint", both: "the sampled users' projection and every partition's checkpoint" }[opts.wipe],
      users: users.length,
      conversationsBefore,
      conversationsAfter,
      epochBefore,
      epochAfter,
      registrationsFlushed,
      usersRebuilt,
      authority: this.sessions.authority.describe(),
      checkedUsers,
      listRowsCompared,
      differences,
      ok: differences.length === 0,
    };
  }
}

/** How long a drill waits for the other nodes of a cluster to catch up and flush (DRILL_SETTLE_MS). */
export const DRILL_SETTLE_MS = 30_000;

function compare(u: DrillUser, before: Snapshot, after: Snapshot): DrillDifference[] {
  const out: DrillDifference[] = [];
  // a snapshot is keyed by conversation id (Uuid); Object.keys gives them back as plain strings
  const convs = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort() as Uuid[];
  for (const c of convs) {
    const b = before[c];
    const a = after[c];
    const base = { tenant: u.tenant, user: u.user, conversation: c };
    if (!a || !b) {
      out.push({ ...base, field: "presence", before: b !== undefined, after: a !== undefined });
      continue;
    }
    for (const field of ["unread", "unreadExact", "headConversationSeq", "lastActivityId"] as const) {
      if (a[field] !== b[field]) out.push({ ...base, field, before: b[field], after: a[field] });
    }
  }
  return out;
}
