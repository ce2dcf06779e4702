import type { KeySpace } from "../base/index.js";
import type { ConversationService } from "../conversation/index.js";
import type { DispatchLog } from "../dispatch/index.js";
import type { ConversationStateAuthority, DrillCheck } from "../projection/index.js";
import type { RedisStore } from "../store/index.js";
import { ListCompactor, type CompactorOptions } from "./compactor.js";
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
}

/** The conversation list as one unit: the state engine and its compaction consumer, started and stopped together. */
export class ConversationList {
  readonly service: ConversationListService;
  readonly compactor: ListCompactor;

  constructor(deps: ConversationListDeps, opts: ConversationListStackOptions = {}) {
    this.service = new ConversationListService(deps.store, deps.keys, deps.conversations, deps.authority, opts);
    this.compactor = new ListCompactor(deps.store, deps.keys, deps.log, this.service, { ...(opts.now ? { now: opts.now } : {}), ...opts.compactor });
  }

  start(): Promise<void> {
    return this.compactor.start();
  }

  /**
   * The rebuild drill's comparator (core/projection drill `compare`): writes what this node's
   * consumer holds first (a row compared before its window flushed would read as drift), then
   * compares the user's cached rows and badge with the definition.
   */
  async drillCheck(tenant: string, user: string): Promise<DrillCheck> {
    await this.compactor.poll();
    await this.compactor.flush();
    return this.service.drillCheck(tenant, user);
  }

  /** Stops the consumer after its final flush. */
  stop(): Promise<void> {
    return this.compactor.stop();
  }
}
