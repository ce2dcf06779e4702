import type { Uuid } from "../base/index.js";
import { metrics } from "./metrics.js";
import type { Located, OnlineRegistry } from "./registry.js";

/** How long changes of users' lists gather before their users are located and sent on (one locate per window). */
export const SESSION_RELAY_WINDOW_MS = 150;
/** Changes held for the next window at most; past it the oldest are dropped (their devices see a version gap and pull). */
export const SESSION_RELAY_MAX_PENDING = 50_000;

/** A change of a user's conversation list as the relay carries it: who it is for, and the change itself (opaque here). */
export interface RelayedChange {
  tenant: Uuid;
  user: Uuid;
}

/** Sends changes to the node that holds connections of their users (node RPC PushSessionChanges). */
export type SessionChangeForwarder<C extends RelayedChange> = (to: Located, tenant: Uuid, changes: C[]) => Promise<void>;

/**
 * Changes of users' conversation lists made on this node, for those users' devices on other nodes
 * (issue 27): a device gets SESSION_DELTA and BADGE_UPDATE from the session view's watch on its own
 * node, but a list is written on the node that owns the conversation's partition (an API node owns
 * none). Every change the list engine emits here is held for SESSION_RELAY_WINDOW_MS; then its
 * users are located in the online registry (one cached read when no other node holds devices) and
 * each node that holds some gets their changes in one call, which it feeds to its session view as
 * if they were its own. Absolute values with the user's durable version: a lost or repeated change
 * is harmless (spec 002 §5.1), a device that sees a version gap pulls its list. Without a cluster
 * nothing is held.
 */
export class SessionRelay<C extends RelayedChange> {
  private pending: C[] = [];
  private timer: NodeJS.Timeout | undefined;
  private forwarder: SessionChangeForwarder<C> | null = null;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly registry: OnlineRegistry, private readonly log?: (line: string) => void) {}

  setForwarder(f: SessionChangeForwarder<C>): void {
    this.forwarder = f;
  }

  /** A change the list engine emitted on this node. */
  offer(change: C): void {
    if (!this.registry.clustered || !this.forwarder) return;
    if (this.pending.length >= SESSION_RELAY_MAX_PENDING) {
      this.pending.shift();
      metrics.sessionRelayDropped.inc();
    }
    this.pending.push(change);
    if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), SESSION_RELAY_WINDOW_MS);
      this.timer.unref();
    }
  }

  /** Sends what is held now and waits for every send (a stopping node). */
  async stop(): Promise<void> {
    this.flush();
    await Promise.allSettled([...this.inFlight]);
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    const p = this.send(batch).catch((err: unknown) => this.log?.(`delivery: relaying list changes: ${err instanceof Error ? err.message : String(err)}`));
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  private async send(batch: C[]): Promise<void> {
    const byTenant = new Map<Uuid, C[]>();
    for (const c of batch) {
      const list = byTenant.get(c.tenant);
      if (list) list.push(c); else byTenant.set(c.tenant, [c]);
    }
    for (const [tenant, changes] of byTenant) {
      const located = await this.registry.locate(tenant, [...new Set(changes.map((c) => c.user))]);
      await Promise.all(located.map(async (to) => {
        const users = new Set(to.users);
        const mine = changes.filter((c) => users.has(c.user));
        try {
          await this.forwarder!(to, tenant, mine);
          metrics.sessionRelayed.inc({ outcome: "ok" }, mine.length);
        } catch (err) {
          // once: the device's next list pull has it
          metrics.sessionRelayed.inc({ outcome: "failed" }, mine.length);
          this.log?.(`delivery: list changes to ${to.nodeId}: ${err instanceof Error ? err.message : String(err)}`);
        }
      }));
    }
  }
}
