import type { KeySpace } from "../base/index.js";
import type { ConversationService } from "../conversation/index.js";
import type { DispatchLog } from "../dispatch/index.js";
import type { ConversationStateAuthority, DrillComparator } from "../projection/index.js";
import type { RedisStore } from "../store/index.js";
import { ListCompactor, type CompactorOptions } from "./compactor.js";
import { RollbackReconciler, type RollbackReconcileOptions } from "./rollback.js";
import { ConversationListService, type ConversationListOptions } from "./service.js";

export interface ConversationListDeps {
  store: RedisStore;
  keys: KeySpace;
  conversations: ConversationService;
  log: DispatchLog;
  authority: ConversationStateAuthority;
}

export interface ConversationListStackOptions extends ConversationListOptions {
  compactor?: CompactorOptions;
  /** The background reconcile after a checkpoint rollback (default: in the background unless the compactor is not). */
  rollback?: RollbackReconcileOptions;
}

/** How many compaction windows a drill waits at most for every node's list consumer to write what the log holds. */
export const DRILL_LIST_SETTLE_WINDOWS = 3;

/** The conversation list as one unit: the state engine and its compaction consumer, started and stopped together. */
export class ConversationList {
  readonly service: ConversationListService;
  readonly compactor: ListCompactor;
  /** §3.4 "checkpoint rollback replay": reconciles the users of a partition whose records the consumer lost. */
  readonly rollback: RollbackReconciler;

  constructor(deps: ConversationListDeps, opts: ConversationListStackOptions = {}) {
    this.service = new ConversationListService(deps.store, deps.keys, deps.conversations, deps.authority, opts);
    const c = opts.compactor ?? {};
    this.rollback = new RollbackReconciler(deps.store, deps.keys, deps.log, this.service, {
      ...(c.background === false ? { background: false } : {}),
      ...(c.log ? { log: c.log } : {}),
      ...(c.onError ? { onError: c.onError } : {}),
      ...opts.rollback,
    });
    this.compactor = new ListCompactor(deps.store, deps.keys, deps.log, this.service, {
      ...(opts.now ? { now: opts.now } : {}),
      onLost: (p, from, to) => this.rollback.lost(p, from, to),
      ...c,
    });
  }

  async start(): Promise<void> {
    await this.compactor.start();
    this.rollback.start();
  }

  /**
   * The rebuild drill's comparator (core/projection drill `compare`). `settle` writes what this
   * node's consumer holds, then waits until every partition's list checkpoint — whichever node
   * owns it — has reached the log's high watermark (a row compared before its window flushed
   * would read as drift), at most DRILL_LIST_SETTLE_WINDOWS windows; `check` compares one user's
   * cached rows and badge with the definition.
   */
  readonly drillComparator: DrillComparator = {
    settle: async () => {
      const windowMs = this.compactor.windowMs;
      const deadline = Date.now() + DRILL_LIST_SETTLE_WINDOWS * windowMs;
      for (;;) {
        await this.compactor.poll();
        await this.compactor.flush();
        if ((await this.compactor.lagging()).length === 0 || Date.now() > deadline) return;
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    check: (u) => this.service.drillCheck(u.tenant, u.user),
  };

  /** Stops the rollback reconcile (after its chunk in flight), then the consumer after its final flush. */
  async stop(): Promise<void> {
    await this.rollback.stop();
    await this.compactor.stop();
  }
}
