import type { KeySpace, Uuid } from "../base/index.js";
import { slotOfUser, StaleOwnerError, type ClusterMembership, type Fence } from "../cluster/index.js";
import type { RedisStore } from "../store/index.js";
import { CmdLog, type CmdLogOptions, type CmdSendRequest, type CommandChannelKey } from "../cmd-log/index.js";
import { ALL_SLOTS, CmdCatchUp } from "./catchup.js";
import { USER_SLOT_NOT_OURS } from "./errors.js";
import { cmdMetrics } from "./metrics.js";
import { buildConversationIntent, validateIntent } from "./intent.js";
import { CmdPendingUpdater } from "./pending.js";
import { RedisCmdStateStore } from "./state.js";
import { CmdSyncApp, type CmdSyncAppOptions } from "./sync-app.js";
import type {
  CmdAckResult, CmdBadPendingFile, CmdConversationState, CmdFlushReport, CmdIntentRouter, CmdStateStore, CmdSendResult, CmdSyncApi, CmdSyncMode, CmdSyncResult,
  ConversationIntent, PendingConversationView,
} from "./types.js";

export interface CmdSyncOptions {
  /** The pending file's folder (`<dataDir>/conversationv2/cmd_conversation_updates.json`); null or absent: no file. */
  dataDir?: string | null;
  /** The pending buffer's flush ticker (CMD_FLUSH_INTERVAL_MS); 0: none (the catch-up's flush points still flush). */
  flushIntervalMs?: number;
  flushBatchSize?: number;
  maxPending?: number;
  /** The catch-up scan's interval (CMD_CATCHUP_INTERVAL_MS); 0: no background scan (tests call catchUp.round()). */
  catchUpIntervalMs?: number;
  scanOverlapMs?: number;
  flushPointIntervalMs?: number;
  /** CMD_FLUSH_POINT_IDLE_MS: how often a slot nothing was pushed for gets a new flush point. */
  flushPointIdleMs?: number;
  log?: CmdLogOptions;
  sync?: Omit<CmdSyncAppOptions, "states" | "pending" | "messages" | "fenceOf" | "log">;
}

export interface CmdSyncDeps {
  store: RedisStore;
  keys: KeySpace;
  /** null: this process owns every slot and writes with token 0. */
  cluster: ClusterMembership | null;
  /**
   * The durable state (default: RedisCmdStateStore on the user slots' tags). CmdSync.start() calls
   * its init() (Cassandra: connect, create the tables) and stop() its close().
   */
  states?: CmdStateStore;
  log?: (line: string) => void;
}

const SOLO_FENCE: Fence = Object.freeze({ owner: "", token: 0 });

/**
 * CMD conversation sync on one node (spec 001, issue 13; docs/cmd-sync-log.md): the durable log,
 * the owner-local pending buffer with its durable state and the sync/ack application, wired with
 * the catch-up scan that makes the pending view survive a SIGKILL of its owner. `runtime.cmd`.
 */
export class CmdSync implements CmdSyncApi {
  readonly name = "cmd-sync";
  readonly log: CmdLog;
  readonly states: CmdStateStore;
  readonly pending: CmdPendingUpdater;
  readonly app: CmdSyncApp;
  readonly catchUp: CmdCatchUp;
  private router: CmdIntentRouter;
  private started = false;
  private readonly catchUpIntervalMs: number | undefined;

  constructor(private readonly deps: CmdSyncDeps, opts: CmdSyncOptions = {}) {
    const say = deps.log ?? ((line: string) => process.stderr.write(`${line}\n`));
    this.log = new CmdLog(deps.store, deps.keys, opts.log);
    this.states = deps.states ?? new RedisCmdStateStore(deps.store, deps.keys);
    this.pending = new CmdPendingUpdater({
      // a flush enters the slot's gate, so that the slot is handed over only once the flush's writes on it are done
      store: this.states, dataDir: opts.dataDir ?? null, slotOf: slotOfUser,
      fenceOf: (slot) => (deps.cluster ? deps.cluster.enter("slot", slot) : SOLO_FENCE), releaseFence: (slot) => deps.cluster?.leave("slot", slot),
      ...(opts.flushIntervalMs !== undefined ? { flushIntervalMs: opts.flushIntervalMs } : {}),
      ...(opts.flushBatchSize !== undefined ? { flushBatchSize: opts.flushBatchSize } : {}),
      ...(opts.maxPending !== undefined ? { maxPending: opts.maxPending } : {}),
      log: (line) => say(`cmd-sync: ${line}`),
    });
    this.app = new CmdSyncApp({
      ...opts.sync, states: this.states, pending: this.pending, messages: this.log,
      fenceOf: (tenant, user) => this.fenceOfSlot(slotOfUser(tenant, user)), log: (line) => say(`cmd-sync: ${line}`),
    });
    this.catchUpIntervalMs = opts.catchUpIntervalMs;
    this.catchUp = new CmdCatchUp({
      store: deps.store, keys: deps.keys, log: this.log, pending: this.pending, buildIntent: (m) => buildConversationIntent(m),
      ownsSlot: (s) => this.ownsSlot(s), fenceOf: (s) => this.fenceOfSlot(s),
      ownedSlots: () => (deps.cluster ? deps.cluster.ownedUnits("slot").filter((s) => deps.cluster!.owns("slot", s)) : [...ALL_SLOTS]),
      ...(opts.catchUpIntervalMs ? { intervalMs: opts.catchUpIntervalMs } : {}),
      ...(opts.scanOverlapMs !== undefined ? { overlapMs: opts.scanOverlapMs } : {}),
      ...(opts.flushPointIntervalMs !== undefined ? { flushPointIntervalMs: opts.flushPointIntervalMs } : {}),
      ...(opts.flushPointIdleMs !== undefined ? { flushPointIdleMs: opts.flushPointIdleMs } : {}),
      say,
    });
    this.router = { pushIntent: async (intent) => this.pushOwned(intent) };
    deps.cluster?.onChange((kind, unit, owned) => {
      if (kind !== "slot") return;
      if (owned) {
        // slots taken while starting are covered by the scan's start from their flush points
        if (this.started) this.catchUp.slotAcquired(unit);
      } else {
        this.pending.dropSlot(unit);
        this.catchUp.slotLost(unit);
      }
    });
  }

  private ownsSlot(slot: number): boolean {
    return this.deps.cluster ? this.deps.cluster.owns("slot", slot) : true;
  }

  private fenceOfSlot(slot: number): Fence | null {
    const c = this.deps.cluster;
    if (!c) return SOLO_FENCE;
    const token = c.tokenOf("slot", slot);
    return token !== null && c.owns("slot", slot) ? { owner: c.nodeId, token } : null;
  }

  ownsUser(tenant: Uuid, user: Uuid): boolean {
    return this.ownsSlot(slotOfUser(tenant, user));
  }

  private requireOwner(tenant: Uuid, user: Uuid): void {
    if (!this.ownsUser(tenant, user)) throw new StaleOwnerError(USER_SLOT_NOT_OURS, { tenant, user, slot: slotOfUser(tenant, user) });
  }

  /** The default router: the users this node owns into its buffer; false when some user is another node's (its scan derives them). */
  private pushOwned(intent: ConversationIntent): boolean {
    const mine = new Map<Uuid, number>();
    for (const [u, r] of intent.userReadSeqs) if (this.ownsUser(intent.tenant, u)) mine.set(u, r);
    const accepted = mine.size === 0 || this.pending.pushIntent({ ...intent, userReadSeqs: mine });
    return accepted && mine.size === intent.userReadSeqs.size;
  }

  /**
   * Pending file first (before any flush), then the catch-up scan's first round from the owned
   * slots' flush points, then its interval. A failure stops what started.
   */
  async start(): Promise<void> {
    await this.states.init?.();
    try {
      await this.pending.start();
    } catch (err) {
      await this.states.close?.();
      throw err;
    }
    try {
      if (this.catchUpIntervalMs === 0) await this.catchUp.prime();
      else await this.catchUp.start();
    } catch (err) {
      await this.pending.stop();
      await this.states.close?.();
      throw err;
    }
    this.started = true;
  }

  /** Stops the scan, then the buffer's last bounded flush and the save of what is left (while this node still holds its slots). */
  async stop(): Promise<void> {
    this.started = false;
    await this.catchUp.stop();
    try {
      await this.pending.stop();
    } finally {
      await this.states.close?.();
    }
  }

  /**
   * Commits (CmdLog.commit validates before any write) and hands the intent to the router; a
   * routing failure never fails the send (intentAccepted false, counted: the owners' catch-up scan
   * derives it). A duplicate routes its intent again: harmless, and it covers a first attempt whose
   * routing failed. NoPersist and recipient-less messages make no intent (intentAccepted true).
   */
  async send(req: CmdSendRequest): Promise<CmdSendResult> {
    const { message, duplicate } = await this.log.commit(req);
    const intent = buildConversationIntent(message);
    let intentAccepted = true;
    if (intent) {
      intentAccepted = await this.router.pushIntent(intent).catch(() => false);
      if (!intentAccepted) cmdMetrics.intentsNotAccepted.inc();
    }
    return { message, duplicate, intentAccepted };
  }

  /** A routed intent: validated (InvalidArgumentError), then all or nothing — stale_owner when any user is not ours. */
  acceptIntent(intent: ConversationIntent): "ok" | "stale_owner" | "dropped" {
    validateIntent(intent);
    for (const u of intent.userReadSeqs.keys()) if (!this.ownsUser(intent.tenant, u)) return "stale_owner";
    return this.pending.pushIntent(intent) ? "ok" : "dropped";
  }

  /**
   * What each user has durably acknowledged on a channel: the max of the read and deleted-to seq of
   * the user's durable row (0 without one). The pending buffer is not asked: an ack writes the
   * durable row before it clears anything there. Retention's acknowledged trim (issue 26).
   */
  async acknowledgedSeqs(tenant: Uuid, channel: CommandChannelKey, users: readonly Uuid[]): Promise<Map<Uuid, number>> {
    const rows = await Promise.all(users.map((u) => this.states.get(tenant, u, channel)));
    return new Map(users.map((u, i) => [u, rows[i] ? Math.max(rows[i]!.readSeq, rows[i]!.deletedToSeq) : 0]));
  }

  /** Rejects with StaleOwnerError when the user's slot is not ours. */
  async syncLocal(tenant: Uuid, user: Uuid, limit: number, mode: CmdSyncMode = "record"): Promise<CmdSyncResult> {
    this.requireOwner(tenant, user);
    return this.app.sync(tenant, user, limit, mode);
  }

  async ackLocal(tenant: Uuid, user: Uuid, lastMessageSeq: number): Promise<CmdAckResult> {
    this.requireOwner(tenant, user);
    return this.app.ack(tenant, user, lastMessageSeq);
  }

  /** Throws StaleOwnerError when the user's slot is not ours. */

  pendingLocal(tenant: Uuid, user: Uuid, limit: number): PendingConversationView[] {
    this.requireOwner(tenant, user);
    return this.pending.listPending(tenant, user, limit);
  }

  /** The durable rows (any node may read them). */
  stateOf(tenant: Uuid, user: Uuid, limit: number): Promise<CmdConversationState[]> {
    return this.states.listActive(tenant, user, limit);
  }

  flush(): Promise<CmdFlushReport> {
    return this.pending.flush();
  }

  /**
   * Every background CMD write of earlier work done now: a catch-up round, the buffer's flush and
   * the changed slots' flush points (CatchUp.settle). Tests call it before checking that a refused
   * call wrote nothing, as they flush the conversation list's compactor.
   */
  settle(): Promise<void> {
    return this.catchUp.settle();
  }

  setRouter(router: CmdIntentRouter): void {
    this.router = router;
  }

  get badFile(): string | null {
    return this.pending.badFile;
  }

  pendingEntries(): number {
    return this.pending.size();
  }

  badPendingFile(): CmdBadPendingFile | null {
    return this.pending.badPendingFile();
  }
}
