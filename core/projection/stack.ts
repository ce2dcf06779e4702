import type { ConversationStateAuthority } from "./authority.js";
import { RebuildDrill } from "./drill.js";
import type { KeySpace } from "../base/index.js";
import type { ConversationService } from "../conversation/index.js";
import type { DispatchLog } from "../dispatch/index.js";
import type { RedisStore } from "../store/index.js";
import { ProjectionEpoch } from "./epoch.js";
import { SessionProjector, type PartitionAudit, type ProjectionStartReport, type ProjectorOptions } from "./consumer.js";
import { RegistrationTask, type QueueDepth, type RegistrationOptions } from "./registration.js";
import { UserSessionProjection } from "./sessions.js";
import type { UnitGate } from "../cluster/index.js";

export interface ProjectionStackOptions {
  /** false: nothing runs in the background (no polling, registration or trimming); the owner drives catchUp()/drainAll() (tests, benches). */
  background?: boolean;
  projector?: ProjectorOptions;
  registration?: RegistrationOptions;
  /** Dispatch-log retention (DESIGN §2: default 1 day); 0 disables trimming. */
  retentionMs?: number;
  /** How often retention trimming runs. */
  trimIntervalMs?: number;
  log?: (line: string) => void;
  onError?: (err: unknown) => void;
  /** The cluster's gate (core/cluster): which partitions the consumer polls and which user slots the registration task drains. Default: all. */
  gate?: UnitGate;
}

/** What the session projection stands on: the store and key space, the conversations it summarises, the log it consumes, its authority. */
export interface ProjectionDeps {
  store: RedisStore;
  keys: KeySpace;
  conversations: ConversationService;
  log: DispatchLog;
  authority: ConversationStateAuthority;
}

export interface ProjectionStatus {
  epoch: number;
  /** Each partition's audit (which carries the checkpoint's update time). */
  partitions: PartitionAudit[];
  pendingPerInstance: QueueDepth[];
  authority: string;
  retentionMs: number;
  /** Set when the consumer stopped on a partition it must not continue on. */
  failure: string | null;
}

export const DEFAULT_RETENTION_MS = 24 * 60 * 60 * 1000;

/**
 * The session projection as one unit, wired the same way everywhere (admin server, demo, tests,
 * benches): the durable consumer, the registration task, the per-user rebuild on list pulls, the
 * retention trimmer of the dispatch log, and the rebuild drill. `lowLatency` is what the outbox
 * relay calls after each append.
 */
export class ProjectionStack {
  readonly epoch: ProjectionEpoch;
  readonly projector: SessionProjector;
  readonly registration: RegistrationTask;
  readonly sessions: UserSessionProjection;
  readonly drill: RebuildDrill;
  readonly retentionMs: number;
  private trimTimer: NodeJS.Timeout | undefined;

  readonly log: DispatchLog;
  readonly authority: ConversationStateAuthority;

  constructor(deps: ProjectionDeps, private readonly opts: ProjectionStackOptions = {}) {
    const { store, keys, conversations, log, authority } = deps;
    this.log = log;
    this.authority = authority;
    const onError = opts.onError ?? (() => {});
    this.epoch = new ProjectionEpoch(store, keys);
    this.projector = new SessionProjector(store, keys, log, this.epoch, {
      ...(opts.log ? { log: opts.log } : {}),
      onError,
      ...opts.projector,
      ...(opts.gate ? { gate: opts.gate } : {}),
      ...(opts.background === false ? { poll: false } : {}),
    });
    this.registration = new RegistrationTask(store, keys, authority, { onError, ...opts.registration, ...(opts.gate ? { gate: opts.gate } : {}) });
    this.sessions = new UserSessionProjection(store, keys, conversations, authority, this.epoch);
    this.drill = new RebuildDrill(store, keys, this.sessions, this.projector, this.registration);
    this.retentionMs = opts.retentionMs ?? DEFAULT_RETENTION_MS;
  }

  /**
   * The relay's hook: project the records just appended. The durable consumer reaches them on its
   * next poll and only moves its checkpoint past them (it is woken at once only when this failed):
   * waking it per append made it poll every partition after every commit, and project each record
   * a second time.
   */
  readonly lowLatency = async (records: Parameters<SessionProjector["projectRecords"]>[0]): Promise<void> => {
    try {
      await this.projector.projectRecords(records);
    } catch (err) {
      this.projector.kick();
      throw err;
    }
  };

  /**
   * Prepares the authority, audits and starts the consumer (throws ProjectionRefusedError when it
   * must not start), then starts the registration task and retention trimming.
   */
  async start(): Promise<ProjectionStartReport> {
    await this.authority.init();
    const report = await this.projector.start();
    if (this.opts.background === false) return report;
    this.registration.start();
    if (this.retentionMs > 0) {
      const trim = () => {
        this.log.trim(Date.now() - this.retentionMs)
          .then((n) => {
            const dropped = n.reduce((a, b) => a + b, 0);
            if (dropped > 0) this.opts.log?.(`dispatch log: retention dropped ${dropped} records older than ${this.retentionMs} ms`);
          })
          .catch((err: unknown) => this.opts.onError?.(err));
      };
      this.trimTimer = setInterval(trim, this.opts.trimIntervalMs ?? 60_000);
      this.trimTimer.unref();
    }
    return report;
  }

  async status(): Promise<ProjectionStatus> {
    // one read of each checkpoint: the audit carries its update time (the dashboard calls this every tick)
    const [epoch, partitions, pendingPerInstance] = await Promise.all([
      this.epoch.get(),
      this.projector.audit(),
      this.registration.depthPerInstance(),
    ]);
    return {
      epoch,
      partitions,
      pendingPerInstance,
      authority: this.authority.describe(),
      retentionMs: this.retentionMs,
      failure: this.projector.failure?.message ?? null,
    };
  }

  async stop(): Promise<void> {
    if (this.trimTimer) clearInterval(this.trimTimer);
    await this.projector.stop();
    await this.registration.stop();
  }

  /** stop() and close the authority's connections. */
  async close(): Promise<void> {
    await this.stop();
    await this.authority.close();
  }
}
