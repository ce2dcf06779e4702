import { REACTION_MERGE_MAX_PENDING, REACTION_PUSH_MERGE_WINDOW_MS, TYPING_PUSH_MERGE_WINDOW_MS, type Uuid } from "../base/index.js";
import { TRANSIENT_SEQ } from "../conversation/index.js";
import type { ConversationEvent, LocalConnections } from "./local.js";
import type { MembersAudience } from "./members.js";
import { metrics } from "./metrics.js";
import type { UserEventForwarder } from "./read-sync.js";
import type { Located, OnlineRegistry } from "./registry.js";

export interface ConversationEventsOptions {
  /** reaction_push_merge_window (REACTION_PUSH_MERGE_WINDOW_MS). */
  mergeWindowMs?: number;
  /** The merge window of TYPING_UPDATE per (conversation, user) (TYPING_PUSH_MERGE_WINDOW_MS). */
  typingMergeWindowMs?: number;
  /** REACTION_MERGE_MAX_PENDING. */
  maxPending?: number;
  log?: (line: string) => void;
}

/** One slot's pushes at this node: the order of the last that went out, and the newest update held for the window's end. */
interface Slot {
  tenant: Uuid;
  sentOrder: number;
  held: ConversationEvent | null;
  timer: NodeJS.Timeout;
}

/** What one window merges: a message's reactions; one user's typing in a conversation. */
const slotKey = (tenant: Uuid, e: ConversationEvent) => (e.kind === "reaction" ? `${tenant}|${e.conversation}|r${e.conversationSeq}` : `${tenant}|${e.conversation}|t${e.user}`);
/** The order of one slot's events: a reaction summary's version; a typing event's time. */
const orderOf = (e: ConversationEvent) => (e.kind === "reaction" ? e.version : e.at);

/**
 * Conversation events (spec 003 §4.2: REACTION_UPDATE; §2.1: TYPING_UPDATE) to the members of a
 * conversation online now (issue 28). Every node that holds connections merges for its own: per
 * message's reactions (per user's typing in a conversation), the first update
 * goes at once, and then at most one per merge window — the newest held at the window's end
 * (absolute counts: dropping the earlier ones loses nothing). Since each connection is on one node,
 * a connection gets at most one frame per message per window, whichever node took the reactions.
 * An update older than one sent or held (summary_version) is dropped: updates may cross on the
 * way. The node that took a reaction hands it to every other node holding connections
 * (OnlineRegistry.remoteTargets) over PushUserEvents; while a call to a node is in flight the
 * updates for it wait and a newer one of the same message replaces the older (a reaction storm
 * costs a node one call at a time, not one per reaction). Online only, never stored: a device
 * offline reads the counts with the messages (core/reactions).
 */
export class ConversationEvents {
  private readonly slots = new Map<string, Slot>();
  private readonly windowMs: number;
  private readonly typingWindowMs: number;
  private readonly maxPending: number;
  private forwarder: UserEventForwarder | null = null;
  /** Per other node: the updates waiting for its call in flight, newest per message. */
  private readonly outgoing = new Map<string, { to: Located; waiting: Map<string, { tenant: Uuid; event: ConversationEvent }>; busy: boolean }>();
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly local: LocalConnections,
    private readonly audience: MembersAudience,
    private readonly registry: OnlineRegistry,
    private readonly opts: ConversationEventsOptions = {},
  ) {
    this.windowMs = opts.mergeWindowMs ?? REACTION_PUSH_MERGE_WINDOW_MS;
    this.typingWindowMs = opts.typingMergeWindowMs ?? TYPING_PUSH_MERGE_WINDOW_MS;
    this.maxPending = opts.maxPending ?? REACTION_MERGE_MAX_PENDING;
  }

  setForwarder(f: UserEventForwarder): void {
    this.forwarder = f;
  }

  /** An event made on this node: to the connections here (merged) and to every other node holding connections. */
  publish(tenant: Uuid, event: ConversationEvent): void {
    this.take(tenant, event);
    if (!this.registry.clustered) return;
    const p = this.registry.remoteTargets().then((targets) => {
      for (const to of targets) this.forward(to, tenant, event);
    }, (err: unknown) => this.opts.log?.(`delivery: conversation event: finding the nodes with connections: ${String(err)}`));
    this.track(p);
  }

  /** An event for this node's connections (made here, or forwarded by the node that made it): merged, then pushed. */
  take(tenant: Uuid, event: ConversationEvent): void {
    const key = slotKey(tenant, event);
    const slot = this.slots.get(key);
    if (!slot) {
      if (this.slots.size >= this.maxPending) {
        metrics.conversationEvents.inc({ kind: event.kind, outcome: "dropped" });
        return;
      }
      const s: Slot = { tenant, sentOrder: orderOf(event), held: null, timer: this.arm(key, this.windowOf(event)) };
      this.slots.set(key, s);
      metrics.conversationEvents.inc({ kind: event.kind, outcome: "sent" });
      this.send(tenant, event);
      return;
    }
    if (orderOf(event) <= slot.sentOrder || (slot.held !== null && orderOf(event) <= orderOf(slot.held))) {
      metrics.conversationEvents.inc({ kind: event.kind, outcome: "stale" });
      return;
    }
    metrics.conversationEvents.inc({ kind: event.kind, outcome: "held" });
    slot.held = event;
  }

  /** Messages with a window open here now. */
  get pending(): number {
    return this.slots.size;
  }

  async stop(): Promise<void> {
    for (const s of this.slots.values()) clearTimeout(s.timer);
    this.slots.clear();
    await Promise.allSettled([...this.inFlight]);
  }

  private windowOf(e: ConversationEvent): number {
    return e.kind === "reaction" ? this.windowMs : this.typingWindowMs;
  }

  /** At the window's end: the held update goes and a new window opens; none held: the slot goes. */
  private arm(key: string, windowMs: number): NodeJS.Timeout {
    const t = setTimeout(() => {
      const s = this.slots.get(key);
      if (!s) return;
      if (s.held === null) {
        this.slots.delete(key);
        return;
      }
      const e = s.held;
      s.held = null;
      s.sentOrder = orderOf(e);
      s.timer = this.arm(key, windowMs);
      this.send(s.tenant, e);
    }, windowMs);
    t.unref();
    return t;
  }

  /** To the connections here of the conversation's ACTIVE members (TRANSIENT_SEQ: the members now); a typing event not to the typer's. */
  private send(tenant: Uuid, event: ConversationEvent): void {
    if (this.local.usersOf(tenant).size === 0) return;
    const p = this.audience.resolve(tenant, event.conversation, [TRANSIENT_SEQ]).then(([users]) => {
      this.local.pushConversationEvent(tenant, event.kind === "typing" ? users!.filter((u) => u !== event.user) : users!, event);
    }, (err: unknown) => this.opts.log?.(`delivery: conversation event of ${event.conversation}: ${err instanceof Error ? err.message : String(err)}`));
    this.track(p);
  }

  private forward(to: Located, tenant: Uuid, event: ConversationEvent): void {
    let q = this.outgoing.get(to.nodeId);
    if (!q) this.outgoing.set(to.nodeId, q = { to, waiting: new Map(), busy: false });
    q.to = to;
    const key = slotKey(tenant, event);
    const prior = q.waiting.get(key);
    if (prior && orderOf(prior.event) >= orderOf(event)) return;
    q.waiting.set(key, { tenant, event });
    if (!q.busy) this.track(this.drain(q));
  }

  /** One call at a time per node, each with what waited for it, by tenant. */
  private async drain(q: { to: Located; waiting: Map<string, { tenant: Uuid; event: ConversationEvent }>; busy: boolean }): Promise<void> {
    q.busy = true;
    try {
      while (q.waiting.size > 0) {
        const byTenant = new Map<Uuid, ConversationEvent[]>();
        for (const { tenant, event } of q.waiting.values()) {
          const list = byTenant.get(tenant);
          if (list) list.push(event); else byTenant.set(tenant, [event]);
        }
        q.waiting.clear();
        for (const [tenant, events] of byTenant) {
          if (!this.forwarder) {
            metrics.forwarded.inc({ outcome: "failed" });
            continue;
          }
          try {
            await this.forwarder(q.to, { tenant, events: [], conversationEvents: events.map(({ encoded: _, ...e }) => e) });
            metrics.forwarded.inc({ outcome: "ok" });
          } catch (err) {
            // once: the counts are read with the messages; the next update carries them whole
            metrics.forwarded.inc({ outcome: "failed" });
            this.opts.log?.(`delivery: conversation events to ${q.to.nodeId}: ${err instanceof Error ? err.message : String(err)}`);
          }
        }
      }
    } finally {
      q.busy = false;
    }
  }

  private track(p: Promise<void>): void {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }
}
