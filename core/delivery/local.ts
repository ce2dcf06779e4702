import type { Uuid } from "../base/index.js";
import { metrics } from "./metrics.js";

const EMPTY: ReadonlySet<Uuid> = new Set();

/**
 * A committed message on its way to devices (issue 27): one per dispatch record, shared by every
 * connection that gets it. `encoded` is the door's frame, made by the first connection that
 * writes it and reused by the others (a message is encoded once per node, not once per socket).
 */
export interface DeliveryItem {
  tenant: Uuid;
  conversation: Uuid;
  conversationSeq: number;
  /** The raw history entry (core/conversation history.ts): the door decodes what it shows. */
  entry: string;
  /** When the message was committed (ms), for the commit-to-push latency. */
  createdAt: number;
  encoded?: Uint8Array;
}

/** A user's read mark on another device (spec 003 §2.2): the conversation is read up to readSeq. */
export interface ReadSyncEvent {
  kind: "read";
  conversation: Uuid;
  readSeq: number;
}

/**
 * A call's signal to a user (spec 003 §5): passed through to their devices online, never stored.
 * `signal` is the client frames' RtcKind number (INVITE 1 … TIMEOUT 8).
 */
export interface RtcEvent {
  kind: "rtc";
  conversation: Uuid;
  fromUser: Uuid;
  fromDevice: string;
  callId: string;
  signal: number;
  payload: Uint8Array;
}

/** Something that happened to a user, pushed to their devices and never stored as a message. */
export type UserEvent = ReadSyncEvent | RtcEvent;

/**
 * A message's reaction summary changed (spec 003 §4.2): the absolute counts at summary_version,
 * pushed to the conversation's members online now, at most one per message per connection in
 * reaction_push_merge_window. `encoded` is the door's frame, made once per node like a message's.
 */
export interface ReactionEvent {
  kind: "reaction";
  conversation: Uuid;
  conversationSeq: number;
  version: number;
  counts: readonly { key: string; count: number }[];
  encoded?: Uint8Array;
}

/**
 * A member is typing in a conversation, or stopped (spec 003 §2.1): pushed to the conversation's
 * other members online now, never stored; `at` (ms at the node that took it) orders one user's events.
 */
export interface TypingEvent {
  kind: "typing";
  conversation: Uuid;
  user: Uuid;
  typing: boolean;
  at: number;
  encoded?: Uint8Array;
}

/** Something that happened in a conversation, pushed to its members online now and never stored as a message. */
export type ConversationEvent = ReactionEvent | TypingEvent;

/**
 * Events for one node: each user event to every connection of its user there except
 * `exceptDevices`; each conversation event to the connections there of the conversation's ACTIVE
 * members (found there), through that node's merge window.
 */
export interface UserEventBatch {
  tenant: Uuid;
  events: { user: Uuid; event: UserEvent; exceptDevices: string[] }[];
  conversationEvents?: ConversationEvent[];
  /**
   * Users whose online state may have changed (their first or last connection on the sender came or
   * went, and the online registry says so already): the receiver's presence subscriptions read them
   * again (core/presence). Names no state: a late one cannot undo a newer one.
   */
  presence?: Uuid[];
}

/**
 * What one node delivers: items in order, each with the recipients it holds connections of — or,
 * for a large group's message (`members`), none named: the receiver pushes it to its own
 * connections of the members visible at the seq (MembersAudience).
 */
export interface DeliveryBatch {
  tenant: Uuid;
  items: { item: DeliveryItem; users: Uuid[]; members?: boolean }[];
}

/**
 * One device connection as the engine sees it (the gateway's connection implements it): who it
 * is, its counters, and the ways to push to it or end it.
 */
export interface DeviceConnection {
  readonly tenant: Uuid;
  readonly user: Uuid;
  readonly device: string;
  /** When it connected (ms). */
  readonly since: number;
  /** The peer's address as the socket saw it. */
  readonly remote: string;
  readonly framesIn: number;
  readonly framesOut: number;
  /** Bytes queued on the socket, not yet written. */
  readonly buffered: number;
  /** Pushes committed messages, in order; false when the connection did not take them (slow, closing). */
  push(item: DeliveryItem): boolean;
  /** Pushes a user event (read sync); false when the connection did not take it. */
  pushEvent(event: UserEvent): boolean;
  /** Pushes a conversation event (a reaction summary); false when the connection did not take it. */
  pushConversationEvent(event: ConversationEvent): boolean;
  close(code: number, reason: string): void;
  /** Closes it for an operator (qimctl connections kick) with the door's code for that. */
  kick(): void;
  /** Tells the device to reconnect (elsewhere) after `afterMs`; the door closes it if it has not gone some time after. */
  reconnect(afterMs: number, reason: string): void;
}

/** The first and the last connection of a user on this node (the online registry writes them). */
export interface PresenceHooks {
  online(tenant: Uuid, user: Uuid): void;
  offline(tenant: Uuid, user: Uuid): void;
}

/**
 * This node's device connections by user (issue 27): the per-node half of the online registry.
 * The gateway adds a connection once it authenticated and removes it when it closes; delivery,
 * `qimctl connections` and a drain read it.
 */
export class LocalConnections {
  private readonly byUser = new Map<string, Set<DeviceConnection>>();
  /** The users with a connection here, per tenant (a members record's audience is found among them). */
  private readonly byTenant = new Map<Uuid, Set<Uuid>>();
  private count = 0;
  private hooks: PresenceHooks | null = null;

  /** Set by the runtime: the cross-node registry learns a user's first and last connection here. */
  setHooks(h: PresenceHooks): void {
    this.hooks = h;
  }

  add(c: DeviceConnection): void {
    const key = c.tenant + c.user;
    let set = this.byUser.get(key);
    if (!set) {
      set = new Set();
      this.byUser.set(key, set);
      let users = this.byTenant.get(c.tenant);
      if (!users) this.byTenant.set(c.tenant, users = new Set());
      users.add(c.user);
      this.hooks?.online(c.tenant, c.user);
    }
    if (set.has(c)) return;
    set.add(c);
    this.count++;
    this.observe();
  }

  remove(c: DeviceConnection): void {
    const key = c.tenant + c.user;
    const set = this.byUser.get(key);
    if (!set?.delete(c)) return;
    this.count--;
    if (set.size === 0) {
      this.byUser.delete(key);
      const users = this.byTenant.get(c.tenant);
      users?.delete(c.user);
      if (users?.size === 0) this.byTenant.delete(c.tenant);
      this.hooks?.offline(c.tenant, c.user);
    }
    this.observe();
  }

  /** Whether the user has a connection on this node. */
  has(tenant: Uuid, user: Uuid): boolean {
    return this.byUser.has(tenant + user);
  }

  /** The user's connections on this node (empty when none). */
  ofUser(tenant: Uuid, user: Uuid): readonly DeviceConnection[] {
    const set = this.byUser.get(tenant + user);
    return set ? [...set] : [];
  }

  /** The users of a tenant with a connection here (live view: do not keep it across an await). */
  usersOf(tenant: Uuid): ReadonlySet<Uuid> {
    return this.byTenant.get(tenant) ?? EMPTY;
  }

  /** Every connection of this node. */
  all(): DeviceConnection[] {
    const out: DeviceConnection[] = [];
    for (const set of this.byUser.values()) for (const c of set) out.push(c);
    return out;
  }

  /** Every user with a connection here (the registry's periodic refresh). */
  users(): { tenant: Uuid; user: Uuid }[] {
    const out: { tenant: Uuid; user: Uuid }[] = [];
    for (const set of this.byUser.values()) {
      const c = set.values().next().value as DeviceConnection;
      out.push({ tenant: c.tenant, user: c.user });
    }
    return out;
  }

  get size(): number {
    return this.count;
  }

  /** Pushes a batch to the connections of its users here; returns how many pushes were made. */
  deliver(batch: DeliveryBatch): number {
    let pushed = 0;
    const now = Date.now();
    for (const { item, users } of batch.items) {
      for (const user of users) {
        const set = this.byUser.get(batch.tenant + user);
        if (!set) continue;
        for (const c of set) {
          if (c.push(item)) {
            pushed++;
            metrics.lag.observe(Math.max(0, now - item.createdAt) / 1000);
          }
        }
      }
    }
    metrics.deliveries.inc(pushed);
    return pushed;
  }

  /** Pushes each event to the connections of its user here, except its `exceptDevices`; returns how many took one. */
  pushEvents(batch: UserEventBatch): number {
    let n = 0;
    for (const { user, event, exceptDevices } of batch.events) {
      for (const c of this.byUser.get(batch.tenant + user) ?? []) {
        if (exceptDevices.includes(c.device)) continue;
        if (c.pushEvent(event)) {
          n++;
          metrics.events.inc({ kind: event.kind });
        }
      }
    }
    return n;
  }

  /** Pushes a conversation event to the connections here of `users`; returns how many took it. */
  pushConversationEvent(tenant: Uuid, users: readonly Uuid[], event: ConversationEvent): number {
    let n = 0;
    for (const user of users) {
      for (const c of this.byUser.get(tenant + user) ?? []) if (c.pushConversationEvent(event)) n++;
    }
    metrics.events.inc({ kind: event.kind }, n);
    return n;
  }

  private observe(): void {
    metrics.connections.set(this.count);
    metrics.users.set(this.byUser.size);
  }
}
