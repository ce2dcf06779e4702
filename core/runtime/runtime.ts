import { KeySpace, TOKENS_PER_USER_MAX } from "../base/index.js";
import { registry } from "../metrics/index.js";
import { ClusterMembership, type ClusterOptions } from "../cluster/index.js";
import { ConversationService, NO_CONTENT_WATERMARKS, type ConversationOptions } from "../conversation/index.js";
import { OutboxRelay, RedisStreamsDispatchLog, type DispatchIdentity, type DispatchRecord, type RelayOptions } from "../dispatch/index.js";
import { cassandraOptionsFromEnv, type CassandraOptions } from "../cassandra/index.js";
import {
  authorityFromEnv, CassandraAuthority, DEFAULT_RETENTION_MS, ProjectionStack, type ConversationStateAuthority, type ProjectionStackOptions, type ProjectionStartReport,
} from "../projection/index.js";
import type { RedisStore } from "../store/index.js";
import { ConversationList, UnreadAuditSampler, type ConversationListStackOptions, type UnreadAuditSamplerOptions } from "../conversation-list/index.js";
import { SESSION_DELTA_MERGE_WINDOW_MAX_MS, SESSION_DELTA_MERGE_WINDOW_MS, SessionView, type SessionViewOptions } from "../session-view/index.js";
import { CassandraCmdStateStore, CmdSync, type CmdSyncOptions } from "../cmd-sync/index.js";
import { DeviceTokens, type DeviceTokensOptions } from "../tokens/index.js";
import { MessageTypeRegistry, type MessageTypeRegistryOptions } from "../registry/index.js";
import { RetentionPolicies, RetentionTrimmer, type RetentionOptions } from "../retention/index.js";
import { Delivery, type DeliveryOptions } from "../delivery/index.js";
import { REACTION_TRIM_BATCH, Reactions, type ReactionsOptions } from "../reactions/index.js";
import { logPushSink, RtcSignalling, type RtcOptions } from "../rtc/index.js";
import { Rooms, type RoomsOptions } from "../rooms/index.js";
import { Presence, type PresenceOptions } from "../presence/index.js";
import { engineModules, type RuntimeModule } from "./modules.js";

/** The dispatch log's identity when none is configured. */
export const DEFAULT_DISPATCH: DispatchIdentity = { clusterId: "qim", topicId: "dispatch", partitionCount: 8 };

/** How often the relay sweeps every bucket by default (commits of this process are kicked at once). */
export const DEFAULT_RELAY_INTERVAL_MS = 1000;

export interface RuntimeOptions {
  store: RedisStore;
  /** Prefix of every key (default "qim"); tests and co-hosted deployments use their own. */
  keyPrefix?: string;
  conversation?: Omit<ConversationOptions, "keyPrefix" | "onCommit" | "onRead" | "watermarks">;
  dispatch?: DispatchIdentity;
  /**
   * The conversation-set authority. Default: a CassandraAuthority from `cassandra` when given,
   * else authorityFromEnv (Cassandra when QIM_CASSANDRA_CONTACT_POINTS is set, else the
   * Redis-hash development fallback). One passed in is stopped with the runtime but not closed.
   */
  authority?: ConversationStateAuthority;
  /**
   * Cassandra settings: the authority's and the durable CMD state's (CassandraCmdStateStore,
   * tables in the same keyspace). Without them the CMD state is on Cassandra when
   * QIM_CASSANDRA_CONTACT_POINTS is set and no `authority` is passed in, else on Redis.
   */
  cassandra?: CassandraOptions;
  projection?: ProjectionStackOptions;
  /** The conversation-list engine (spec 002 §3–§8): options of its state engine and compaction consumer. */
  conversationList?: ConversationListStackOptions;
  /**
   * The background unread audit of spec 002 §3.4 (core/conversation-list UnreadAuditSampler):
   * intervalMs 0 turns it off; default every UNREAD_AUDIT_INTERVAL_MS, correcting what it finds.
   */
  unreadAudit?: UnreadAuditSamplerOptions;
  /** The session view over it (spec 002 §5, §6): snapshot bounds, merge window. */
  sessionView?: SessionViewOptions;
  relay?: Omit<RelayOptions, "onAppended">;
  /** The relay's sweep of every bucket every N ms; 0: no background relay (the owner drains it). */
  relayIntervalMs?: number;
  /**
   * Makes this runtime one node of the engine cluster (core/cluster, docs/cluster.md): it works
   * only on the relay buckets, dispatch partitions and user slots it owns, with fenced writes.
   * Without it the runtime owns everything and writes with token 0.
   */
  cluster?: ClusterOptions;
  /** CMD conversation sync (spec 001): the pending file's folder, flush and catch-up intervals (docs/cmd-sync-log.md). */
  cmd?: CmdSyncOptions;
  /** The message-type registry (core/registry, issue 29): its reload interval. */
  messageTypes?: MessageTypeRegistryOptions;
  /** Device tokens (core/tokens, issue 27): their key source (the node's `tokens.keys` file); without it the runtime issues and verifies none. */
  tokens?: DeviceTokensOptions;
  /** Retention (issue 26, core/retention): the trimming task's round every intervalMs (0: no background task; default DEFAULT_RETENTION_INTERVAL_MS). */
  retention?: Omit<RetentionOptions, "gate"> & { intervalMs?: number };
  /** Delivery to online devices (issue 27, core/delivery): the partitions' poll interval, the reaction merge window. */
  delivery?: Pick<DeliveryOptions, "pollIntervalMs" | "reactionMergeWindowMs">;
  /** Reactions (issue 28, core/reactions): the detail limits. */
  reactions?: Omit<ReactionsOptions, "onChange">;
  /** RTC signalling (issue 28, core/rtc): the push sink (default: a line in the log), the ring timeout, the VoIP quota. */
  rtc?: Partial<Pick<RtcOptions, "pushSink" | "ringTimeoutMs" | "voipDailyQuota">>;
  /** Chat rooms (issue 28, core/rooms): the ring's caps, the rates (tests). */
  rooms?: Omit<RoomsOptions, "log">;
  /** Presence subscriptions (issue 28, core/presence): the merge window, the recheck (tests). */
  presence?: Omit<PresenceOptions, "log">;
  log?: (line: string) => void;
}

/** How often the retention task walks the buckets this node owns, by default (issue 26). */
export const DEFAULT_RETENTION_INTERVAL_MS = 60_000;

/**
 * The engine as one unit, wired the same way everywhere (admin server, dev stack, demo, benches,
 * tests): the conversation service, the dispatch log and its outbox relay, the session
 * projection, the conversation list, the session view, CMD sync and the cluster membership. The
 * constructor wires them to each other; starting, stopping and health go through the one list of
 * modules (modules.ts). A commit kicks the relay; an append hands the records to the projection's
 * low-latency path.
 */
export class EngineRuntime {
  readonly store: RedisStore;
  readonly keys: KeySpace;
  readonly conversations: ConversationService;
  readonly dispatchLog: RedisStreamsDispatchLog;
  readonly relay: OutboxRelay;
  readonly projection: ProjectionStack;
  readonly conversationList: ConversationList;
  /** The background unread audit over the list's rows (spec 002 §3.4). */
  readonly unreadAudit: UnreadAuditSampler;
  readonly sessionView: SessionView;
  /** CMD conversation sync (core/cmd-sync): the log, the owner-local pending buffer, sync/ack, the catch-up scan. */
  readonly cmd: CmdSync;
  /** Retention (issue 26): the policies and the trimming task of the relay buckets this node owns. */
  readonly retention: RetentionTrimmer;
  /** Delivery to online devices (issue 27): this node's connections, the online registry, the dispatch log's delivery consumer. */
  readonly delivery: Delivery;
  /** The engine modules in start order (modules.ts, THE list). */
  readonly modules: readonly RuntimeModule[];
  /** This node's membership of the engine cluster; null without `cluster` options. */
  readonly cluster: ClusterMembership | null;
  /** Device tokens (issue 27): the admin API's issuer and the gateway's verifier; null without `tokens` options. */
  readonly tokens: DeviceTokens | null;
  /** The custom message type registry (issue 29, core/registry): what a send of a custom type applies, hot-reloaded. */
  readonly messageTypes: MessageTypeRegistry;
  /** Reactions (issue 28, core/reactions): REACT's executor; each change's summary goes to the members online now through delivery. */
  readonly reactions: Reactions;
  /** RTC signalling (issue 28, core/rtc): a call's signals between online connections, busy and the ring timeout, VoIP pushes. */
  readonly rtc: RtcSignalling;
  /** Chat rooms (issue 28, core/rooms): the writers of the rooms of the room units this node owns, and this node's connections' rooms. */
  readonly rooms: Rooms;
  /** Presence subscriptions (issue 28, core/presence): which users this node's connections watch, and telling other nodes' watchers. */
  readonly presence: Presence;
  private started: RuntimeModule[] = [];
  private stopped = new Set<RuntimeModule>();
  private startReport: ProjectionStartReport | null = null;

  constructor(private readonly opts: RuntimeOptions) {
    this.store = opts.store;
    this.keys = new KeySpace(opts.keyPrefix ?? "qim");
    const relayRef: { relay?: OutboxRelay; list?: ConversationList } = {};
    const dispatch = opts.dispatch ?? DEFAULT_DISPATCH;
    // heartbeats and lease renewals over connections of their own: they keep their deadline while
    // the node's data connections carry deep pipelines and long scripts (issue 22)
    const cluster = opts.cluster ? new ClusterMembership(this.store.dedicated(), this.keys, dispatch.partitionCount, { ...(opts.log ? { log: opts.log } : {}), ...opts.cluster }) : null;
    this.cluster = cluster;
    // a commit into a bucket another node owns goes to that node (the forwarder), else to our relay
    const onCommit = cluster
      ? (bucket: number) => { if (cluster.owns("relay", bucket)) relayRef.relay?.kick(bucket); else cluster.forwardKick(bucket); }
      : (bucket: number) => relayRef.relay?.kick(bucket);
    this.messageTypes = new MessageTypeRegistry(this.store, this.keys, opts.messageTypes);
    const messageTypes = this.messageTypes;
    this.conversations = new ConversationService(this.store, {
      ...opts.conversation, keyPrefix: this.keys.prefix, onCommit,
      messageTypes: (tenant) => messageTypes.current(tenant),
      // an ephemeral type's message: to the members online now, through this node's delivery (built below)
      onTransient: (item) => this.delivery.pushTransient(item),
      // the list's row learns a read position the moment it moves (spec 002 §3.2)
      onRead: async (r) => { await relayRef.list?.service.readMoved(r.tenant, r.group, r.user, r.readConversationSeq); },
      // history and summaries hide what the user cleared or deleted (spec 002 §7)
      watermarks: async (tenant, user, groups) => relayRef.list?.service.watermarks(tenant, user, groups) ?? groups.map(() => NO_CONTENT_WATERMARKS),
    });
    this.dispatchLog = new RedisStreamsDispatchLog(this.store, this.keys, dispatch);
    const authority = opts.authority ?? (opts.cassandra ? new CassandraAuthority(opts.cassandra) : authorityFromEnv(this.store, this.keys));
    this.projection = new ProjectionStack(
      { store: this.store, keys: this.keys, conversations: this.conversations, log: this.dispatchLog, authority },
      { retentionMs: DEFAULT_RETENTION_MS, ...(opts.log ? { log: opts.log } : {}), ...opts.projection, ...(cluster ? { gate: cluster } : {}) },
    );
    // both low-latency paths get each appended batch: the session projection's `convs` and the
    // conversation list's live rows (docs/conversation-list.md, "the low-latency path"); a node
    // that takes no partitions (an API node, docs/cluster.md "Node roles") projects nothing: the
    // partitions' owners pick the records up with their next poll
    const projects = !cluster || cluster.units.includes("partition");
    const onAppended = async (records: DispatchRecord[]): Promise<void> => {
      if (!projects) return;
      this.delivery.consumer.kick(records);
      relayRef.list?.compactor.lowLatency(records);
      await this.projection.lowLatency(records);
    };
    const registryCluster = cluster ? { nodeId: cluster.nodeId, incarnation: cluster.incarnation, liveNodes: () => cluster.liveNodes() } : null;
    this.delivery = new Delivery(this.store, this.keys, this.dispatchLog, {
      ...opts.delivery, ...(opts.log ? { log: opts.log } : {}),
      ...(cluster && registryCluster ? { gate: cluster, cluster: registryCluster } : {}),
    });
    this.reactions = new Reactions(this.store, this.keys, {
      ...(opts.conversation?.now ? { now: opts.conversation.now } : {}),
      ...opts.reactions,
      onChange: (tenant, change) => this.delivery.conversationEvents.publish(tenant, change),
    });
    // a drained node's devices are told to reconnect elsewhere, spread over a window (no storm)
    cluster?.onDraining((draining) => {
      if (draining) this.delivery.drainConnections();
      else this.delivery.draining = false;
    });
    this.relay = new OutboxRelay(this.store, this.keys, this.dispatchLog, { ...opts.relay, onAppended, ...(cluster ? { gate: cluster } : {}) });
    relayRef.relay = this.relay;
    this.conversationList = new ConversationList(
      { store: this.store, keys: this.keys, conversations: this.conversations, log: this.dispatchLog, authority },
      // a cluster node reads only the partitions it owns (as the session projection does)
      { ...opts.conversationList, compactor: {
        ...(opts.log ? { log: opts.log } : {}), ...(cluster ? { gate: cluster } : {}),
        // a live change's wait for its publication and for the merge window stay within §5.1's range together
        livePublishIntervalMs: Math.max(0, SESSION_DELTA_MERGE_WINDOW_MAX_MS - (opts.sessionView?.mergeWindowMs ?? SESSION_DELTA_MERGE_WINDOW_MS)),
        ...opts.conversationList?.compactor,
      } },
    );
    relayRef.list = this.conversationList;
    const listService = this.conversationList.service;
    this.unreadAudit = new UnreadAuditSampler(this.store, this.keys, listService, {
      ...(opts.log ? { log: opts.log } : {}),
      ...(opts.conversationList?.now ? { now: opts.conversationList.now } : {}),
      ...opts.unreadAudit,
    });
    // MAILBOX_DIRTY (spec 002 §3.4) here: the user's conversation set was just rebuilt from the
    // authority after an epoch bump (docs/conversation-list.md, "The reconcile triggers")
    this.projection.sessions.onUserRebuilt = (tenant, user) => {
      listService.reconcileBounded(tenant, user, "mailbox_dirty")
        .catch((err: unknown) => opts.log?.(`conversation list: reconcile after the rebuild of ${user} failed: ${String(err)}`));
    };
    this.sessionView = new SessionView(this.conversationList.service, opts.sessionView);
    // list changes made here reach their users' devices on other nodes (core/delivery's relay)
    listService.onChange((change) => this.delivery.sessions.offer(change));
    // the durable CMD state follows the authority's rule: Cassandra when configured, else the user slots' Redis tags
    const cmdCassandra = opts.cassandra ?? (opts.authority === undefined ? cassandraOptionsFromEnv() : null);
    const cmdStates = cmdCassandra ? new CassandraCmdStateStore({ store: this.store, keys: this.keys, cassandra: cmdCassandra }) : undefined;
    this.cmd = new CmdSync({ store: this.store, keys: this.keys, cluster, ...(cmdStates ? { states: cmdStates } : {}), ...(opts.log ? { log: opts.log } : {}) }, opts.cmd);
    this.retention = new RetentionTrimmer(this.store, this.keys, new RetentionPolicies(this.store, this.keys), {
      ...(opts.conversation?.now ? { now: opts.conversation.now } : {}),
      ...(opts.log ? { onError: (err: unknown) => opts.log?.(`retention: a trimming round failed: ${String(err)}`) } : {}),
      // the list's cached unread of the members who may have counted what went (bounded pages of the member table)
      // the trimmed messages' reactions go with them (bounded steps)
      onHistoryTrimmed: async (tenant, group, floor) => {
        while (await this.reactions.trimBelow(tenant, group, floor) === REACTION_TRIM_BATCH);
      },
      onTrimmed: async (tenant, group, floor) => {
        let cursor = "";
        do {
          const page = await this.conversations.listMembers({ tenant, group, cursor });
          for (const m of page.members) {
            if (m.joinedAt < floor - 1) await listService.retentionMoved(tenant, group, m.userId, floor);
          }
          cursor = page.nextCursor;
        } while (cursor !== "");
      },
      // a CMD channel's history also goes once every recipient acknowledged it (durable CMD state)
      cmdReadSeqs: (tenant, channel, users) => this.cmd.acknowledgedSeqs(tenant, channel, users),
      ...opts.retention,
      ...(cluster ? { gate: cluster } : {}),
    });
    // a unit just taken is worked on at once, not at the next sweep or poll
    cluster?.onChange((kind, unit, owned) => {
      if (!owned) return;
      if (kind === "relay") this.relay.kick(unit);
      else if (kind === "partition") this.projection.projector.kick();
    });
    this.tokens = opts.tokens ? new DeviceTokens(this.store, this.keys, opts.tokens) : null;
    const conversations = this.conversations;
    const tokens = this.tokens;
    this.rtc = new RtcSignalling(this.store, this.keys, {
      deliver: (tenant, user, event) => this.delivery.pushToUser(tenant, user, event),
      activeMembers: (tenant, group, users) => conversations.activeMembers(tenant, group, users),
      // the devices with a live token, newest first (the list is by expiry)
      devicesOf: async (tenant, user) => {
        if (!tokens) return [];
        // every live token (at most TOKENS_PER_USER_MAX: one bounded page)
        const page = await tokens.issuer.list({ tenant, user, limit: TOKENS_PER_USER_MAX, pageToken: "" });
        return [...new Set(page.tokens.map((t) => t.device).reverse())];
      },
      pushSink: opts.rtc?.pushSink ?? logPushSink((line) => opts.log?.(line)),
      ...(opts.log ? { log: opts.log } : {}),
      ...(opts.rtc?.ringTimeoutMs !== undefined ? { ringTimeoutMs: opts.rtc.ringTimeoutMs } : {}),
      ...(opts.rtc?.voipDailyQuota !== undefined ? { voipDailyQuota: opts.rtc.voipDailyQuota } : {}),
    });
    this.rooms = new Rooms(this.store, this.keys, cluster, { ...opts.rooms, ...(opts.log ? { log: opts.log } : {}) });
    this.presence = new Presence(this.store, this.keys, this.delivery, registryCluster, {
      activeMembers: (tenant, group, users) => conversations.activeMembers(tenant, group, users),
    }, { ...opts.presence, ...(opts.log ? { log: opts.log } : {}) });
    this.modules = engineModules(this, {
      relayIntervalMs: opts.relayIntervalMs ?? DEFAULT_RELAY_INTERVAL_MS,
      retentionIntervalMs: opts.retention?.intervalMs ?? DEFAULT_RETENTION_INTERVAL_MS,
      ownsAuthority: opts.authority === undefined,
      onProjectionStart: (report) => { this.startReport = report; },
    });
  }

  /**
   * Starts the modules in list order (modules.ts): the cluster takes its units, the session
   * projection starts (its start-up audit throws ProjectionRefusedError when the log is not ours
   * or lost acknowledged records: then nothing after it starts), the conversation list, its unread
   * audit, the session view, CMD sync (its pending file is loaded), then the relay. When a module
   * fails to start, the ones before it are shut down (stop()) and the error is thrown.
   */
  async start(): Promise<ProjectionStartReport> {
    for (const m of this.modules) {
      try {
        await m.start?.();
      } catch (err) {
        // the failed module cleaned up after itself (CMD sync must not save a buffer it did not load over its file)
        await this.stop();
        throw err;
      }
      this.started.push(m);
      this.say(`started ${m.name}`);
    }
    return this.startReport!;
  }

  /**
   * Shuts the started modules down in reverse start order, in two passes: release (CMD sync's
   * last flush under the slots' fences, then the cluster hands its units over, each once its work
   * in flight stopped), then stop (the relay, the session view, the unread audit, the conversation
   * list, the projection — which closes an authority the runtime made).
   */
  async stop(): Promise<void> {
    const started = [...this.started].reverse();
    this.started = [];
    for (const m of started) {
      if (m.release) {
        await m.release();
        this.say(`released ${m.name}`);
      }
    }
    for (const m of started) {
      if (m.stop) {
        await m.stop();
        this.say(`stopped ${m.name}`);
      }
      this.stopped.add(m);
    }
  }

  /** Each module's state and the metric names it registered (the process registry, by the module's prefixes). */
  async health(): Promise<ModuleHealth[]> {
    const names = (await registry.getMetricsAsJSON()).map((m) => m.name);
    const owner = (name: string): RuntimeModule | undefined => {
      let best: { m: RuntimeModule; len: number } | undefined;
      for (const m of this.modules) for (const p of m.metrics) if (name.startsWith(p) && p.length > (best?.len ?? 0)) best = { m, len: p.length };
      return best?.m;
    };
    return this.modules.map((m) => ({
      name: m.name,
      state: this.started.includes(m) ? "running" : this.stopped.has(m) ? "stopped" : "idle",
      metrics: names.filter((n) => owner(n) === m).sort(),
    }));
  }

  private say(line: string): void {
    this.opts.log?.(`runtime: ${line}`);
  }
}

/** One module's line of EngineRuntime.health(). */
export interface ModuleHealth {
  name: string;
  /** idle: not started yet; running: started and not stopped; stopped: shut down. */
  state: "idle" | "running" | "stopped";
  metrics: string[];
}
