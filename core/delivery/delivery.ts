import { GATEWAY_DRAIN_SPREAD_MS, TYPING_MIN_INTERVAL_MS, type KeySpace, type Uuid } from "../base/index.js";
import type { UnitGate } from "../cluster/index.js";
import type { DispatchLog } from "../dispatch/index.js";
import type { RedisStore } from "../store/index.js";
import { DeliveryConsumer, type DeliveryForwarder } from "./consumer.js";
import { LocalConnections, type DeliveryBatch, type DeliveryItem, type DeviceConnection, type UserEvent, type UserEventBatch } from "./local.js";
import { ConversationEvents } from "./conversation-events.js";
import { TRANSIENT_SEQ } from "../conversation/index.js";
import { MembersAudience } from "./members.js";
import { metrics } from "./metrics.js";
import { ConnectionsView, type ConnectionPeers } from "./operators.js";
import { ReadSync, type UserEventForwarder } from "./read-sync.js";
import { SessionRelay, type RelayedChange, type SessionChangeForwarder } from "./session-relay.js";
import { ONLINE_COUNT_PUBLISH_MS, ONLINE_COUNT_REWRITE_MS, ONLINE_REFRESH_MS, OnlineRegistry, type Located, type RegistryCluster } from "./registry.js";

/** What presence subscriptions hear from delivery: a user's first or last connection here (after the registry wrote it); another node's poke. */
export interface PresenceListener {
  changed(tenant: Uuid, user: Uuid): void;
  poked(tenant: Uuid, users: readonly Uuid[]): void;
}

/** The (conversation, user) pairs whose last TYPING one node remembers at most (the oldest are forgotten first). */
export const TYPING_SEEN_MAX = 100_000;

export interface DeliveryOptions {
  /** The partitions' poll interval when nothing kicked (DELIVERY_POLL_INTERVAL_MS). */
  pollIntervalMs?: number;
  gate?: UnitGate;
  /** This node in the cluster: the registry writes and reads Redis; without it every connection is local. */
  cluster?: RegistryCluster;
  /** read_sync_merge_window (READ_SYNC_MERGE_WINDOW_MS). */
  readSyncMergeWindowMs?: number;
  /** reaction_push_merge_window (REACTION_PUSH_MERGE_WINDOW_MS). */
  reactionMergeWindowMs?: number;
  log?: (line: string) => void;
}

/** The delivery module as the runtime holds it: connections, registry, consumer, and their lifecycle. */
export class Delivery {
  readonly local = new LocalConnections();
  readonly registry: OnlineRegistry;
  readonly consumer: DeliveryConsumer;
  readonly readSync: ReadSync;
  /** Reaction summaries (and what else happens in a conversation, never stored) to its members online now, merged per message (spec 003 §4.2). */
  readonly conversationEvents: ConversationEvents;
  /** List changes made here for users whose devices are on other nodes (the runtime offers every change of the list engine). */
  readonly sessions: SessionRelay<RelayedChange>;
  /** Operators' list and kick of device connections across the cluster. */
  readonly connections: ConnectionsView;
  private readonly audience: MembersAudience;
  /** How user events reach another node (node RPC PushUserEvents); set by the node's RPC listener. */
  private eventForwarder: UserEventForwarder | null = null;
  private refreshTimer: NodeJS.Timeout | undefined;
  private countTimer: NodeJS.Timeout | undefined;

  constructor(store: RedisStore, keys: KeySpace, log: DispatchLog, private readonly opts: DeliveryOptions = {}) {
    this.registry = new OnlineRegistry(store, keys, opts.cluster ?? null);
    this.audience = new MembersAudience(store, keys, this.local);
    const warn = (what: string) => (err: unknown) => opts.log?.(`delivery: ${what}: ${err instanceof Error ? err.message : String(err)}`);
    // presence hears of a change once the registry holds it (another node reading it then sees it)
    this.local.setHooks({
      online: (t, u) => { this.registry.online(t, u).catch(warn("registering an online user")).finally(() => this.presenceHooks?.changed(t, u)); },
      offline: (t, u) => { this.registry.offline(t, u).catch(warn("removing an online user")).finally(() => this.presenceHooks?.changed(t, u)); },
    });
    this.sessions = new SessionRelay(this.registry, opts.log);
    this.connections = new ConnectionsView(this.local, this.registry, opts.cluster ?? null);
    this.readSync = new ReadSync(this.local, this.registry, opts.readSyncMergeWindowMs, opts.log);
    this.conversationEvents = new ConversationEvents(this.local, this.audience, this.registry, {
      ...(opts.reactionMergeWindowMs !== undefined ? { mergeWindowMs: opts.reactionMergeWindowMs } : {}),
      ...(opts.log ? { log: opts.log } : {}),
    });
    this.consumer = new DeliveryConsumer(store, keys, log, this.local, this.registry, {
      ...(opts.pollIntervalMs !== undefined ? { pollIntervalMs: opts.pollIntervalMs } : {}),
      ...(opts.gate ? { gate: opts.gate } : {}),
      ...(opts.log ? { log: opts.log } : {}),
      // the same cache of member entries for the node's own records and forwarded ones
      audience: this.audience,
    });
  }

  /** The node's RPC listener installs how a batch, a user event and a list change reach another node. */
  setForwarder(f: DeliveryForwarder, events: UserEventForwarder, sessions: SessionChangeForwarder<RelayedChange>, peers: ConnectionPeers): void {
    this.eventForwarder = events;
    this.connections.setPeers(peers);
    this.consumer.setForwarder(f);
    this.readSync.setForwarder(events);
    this.conversationEvents.setForwarder(events);
    this.sessions.setForwarder(sessions);
  }

  /**
   * Events another node sent (node RPC PushUserEvents): the user events to their users'
   * connections here, the conversation events through this node's merge window. Returns the
   * pushes of user events made (conversation events go when their window lets them).
   */
  takeEvents(batch: UserEventBatch): number {
    for (const e of batch.conversationEvents ?? []) this.conversationEvents.take(batch.tenant, e);
    if (batch.presence && batch.presence.length > 0) this.presenceHooks?.poked(batch.tenant, batch.presence);
    return batch.events.length > 0 ? this.local.pushEvents(batch) : 0;
  }

  private presenceHooks: PresenceListener | null = null;

  /** Presence subscriptions (core/presence) hear of users' first and last connections here, and of other nodes' pokes. */
  onPresence(l: PresenceListener): void {
    this.presenceHooks = l;
  }

  /** Tells another node that these users' online state may have changed (node RPC PushUserEvents). Rejects on failure. */
  async pokePresence(to: Located, tenant: Uuid, users: Uuid[]): Promise<void> {
    if (!this.eventForwarder) throw new Error("no node RPC forwarder: presence pokes need the node's RPC listener");
    await this.eventForwarder(to, { tenant, events: [], presence: users });
  }

  /** Per (tenant, conversation, user): the last TYPING passed on (what it said, when), oldest first, for TYPING_MIN_INTERVAL_MS. */
  private readonly typingSeen = new Map<string, { typing: boolean; at: number }>();

  /**
   * Whether a TYPING says what the user's last one in the conversation said within
   * TYPING_MIN_INTERVAL_MS: then it goes nowhere (the members know), and nothing needs reading.
   */
  typingUnchanged(tenant: Uuid, conversation: Uuid, user: Uuid, typing: boolean): boolean {
    const last = this.typingSeen.get(`${tenant}|${conversation}|${user}`);
    const same = last !== undefined && last.typing === typing && Date.now() - last.at < TYPING_MIN_INTERVAL_MS;
    if (same) metrics.typingMerged.inc();
    return same;
  }

  /**
   * A member's TYPING (spec 003 §2.1; the caller checked that it is not unchanged and that the user
   * is an ACTIVE member): to the conversation's other members online now. Never stored.
   */
  typing(tenant: Uuid, conversation: Uuid, user: Uuid, typing: boolean): void {
    const key = `${tenant}|${conversation}|${user}`;
    const now = Date.now();
    // re-set at the end: the map stays in the order of the last TYPING, the oldest first out
    this.typingSeen.delete(key);
    while (this.typingSeen.size >= TYPING_SEEN_MAX) this.typingSeen.delete(this.typingSeen.keys().next().value!);
    this.typingSeen.set(key, { typing, at: now });
    this.conversationEvents.publish(tenant, { kind: "typing", conversation, user, typing, at: now });
  }

  /**
   * A user event for one user's devices wherever they are (an RTC signal): the connections here
   * and, on a cluster, every other node the online registry names. Resolves with how many
   * connections here took it and how many other nodes were sent it (0 and 0: the user is offline).
   */
  async pushToUser(tenant: Uuid, user: Uuid, event: UserEvent): Promise<{ here: number; nodes: number }> {
    const batch: UserEventBatch = { tenant, events: [{ user, event, exceptDevices: [] }] };
    const here = this.local.pushEvents(batch);
    if (!this.registry.clustered) return { here, nodes: 0 };
    const located = await this.registry.locate(tenant, [user]);
    const forward = this.eventForwarder;
    const sent = await Promise.all(located.map(async (to) => {
      if (!forward) return 0;
      try {
        await forward(to, batch);
        metrics.forwarded.inc({ outcome: "ok" });
        return 1;
      } catch (err) {
        metrics.forwarded.inc({ outcome: "failed" });
        this.opts.log?.(`delivery: an event for ${user} to ${to.nodeId}: ${err instanceof Error ? err.message : String(err)}`);
        return 0;
      }
    }));
    return { here, nodes: sent.reduce<number>((a, b) => a + b, 0) };
  }

  /**
   * A batch another node's delivery consumer sent (node RPC Deliver): a large group's message
   * (`members`) goes to the connections here of the members visible at its seq, found here; the
   * rest to the users named. Pushed in the batch's order; returns how many pushes were made.
   */
  async deliverForwarded(batch: DeliveryBatch): Promise<number> {
    const members = batch.items.filter((i) => i.members).map((i) => i.item);
    if (members.length === 0) return this.local.deliver(batch);
    const users = await this.audience.resolveItems(members);
    const found = new Map(members.map((item, i) => [item, users[i]!]));
    return this.local.deliver({ tenant: batch.tenant, items: batch.items.map((it) => (it.members ? { item: it.item, users: found.get(it.item)! } : it)) });
  }

  /**
   * A message that is never stored (spec 003 §2.1: an ephemeral type's): to the connections here of
   * the group's ACTIVE members now, and to every other node holding connections, which finds its
   * own (a members item at TRANSIENT_SEQ). Online only, nothing kept: a device offline never gets it.
   * Returns the pushes made here.
   */
  async pushTransient(item: DeliveryItem): Promise<number> {
    const [users] = await this.audience.resolve(item.tenant, item.conversation, [TRANSIENT_SEQ]);
    const pushed = users!.length > 0 ? this.local.deliver({ tenant: item.tenant, items: [{ item, users: users! }] }) : 0;
    const targets = await this.registry.remoteTargets();
    await Promise.all(targets.map((to) => this.consumer.forward(to, { tenant: item.tenant, items: [{ item, users: [], members: true }] })));
    metrics.transient.inc();
    return pushed;
  }

  /** Whether this node drains: its connections were told to reconnect elsewhere, and new ones are too. */
  draining = false;

  /**
   * This node drains (qimctl cluster drain): every connection gets a RECONNECT hint with a delay
   * drawn uniformly from [0, GATEWAY_DRAIN_SPREAD_MS), and so does every connection that
   * authenticates while it drains. Returns how many were told.
   */
  drainConnections(reason = "the node is draining: reconnect to another node"): number {
    this.draining = true;
    const all = this.local.all();
    for (const c of all) c.reconnect(Math.floor(Math.random() * GATEWAY_DRAIN_SPREAD_MS), reason);
    metrics.reconnectHints.inc(all.length);
    this.opts.log?.(`delivery: draining: ${all.length} device connection(s) told to reconnect within ${GATEWAY_DRAIN_SPREAD_MS} ms`);
    return all.length;
  }

  /** A connection that authenticated on a draining node: the same hint. */
  drainOne(c: DeviceConnection): void {
    c.reconnect(Math.floor(Math.random() * GATEWAY_DRAIN_SPREAD_MS), "the node is draining: reconnect to another node");
    metrics.reconnectHints.inc();
  }

  /**
   * This node serves devices (its gateway listener opened): publish its connection count now and,
   * when it changed, every ONLINE_COUNT_PUBLISH_MS while it runs, for `cluster nodes` and the dashboard (a no-op
   * outside a cluster, where the answering server's own count is all there is).
   */
  publishCounts(): void {
    if (!this.registry.clustered || this.countTimer) return;
    // written when the count changed, and again every ONLINE_COUNT_REWRITE_MS (a failover that
    // lost it): an idle node costs one HSET a minute, not one every 5 s
    let last: { count: number; at: number } | null = null;
    const publish = () => {
      const count = this.local.size;
      const now = Date.now();
      if (last !== null && last.count === count && now - last.at < ONLINE_COUNT_REWRITE_MS) return;
      last = { count, at: now };
      this.registry.publishCount(count).catch((err: unknown) => {
        last = null;
        this.opts.log?.(`delivery: publishing the connection count: ${String(err)}`);
      });
    };
    publish();
    this.countTimer = setInterval(publish, ONLINE_COUNT_PUBLISH_MS);
    this.countTimer.unref();
  }

  start(): void {
    this.consumer.start();
    if (this.registry.clustered) {
      this.refreshTimer = setInterval(() => {
        this.registry.refresh(this.local.users()).catch((err: unknown) => this.opts.log?.(`delivery: refreshing online entries: ${String(err)}`));
      }, ONLINE_REFRESH_MS);
      this.refreshTimer.unref();
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.refreshTimer);
    clearInterval(this.countTimer);
    await Promise.all([this.consumer.stop(), this.readSync.stop(), this.sessions.stop(), this.conversationEvents.stop()]);
    await this.registry.withdraw().catch(() => undefined);
  }
}
