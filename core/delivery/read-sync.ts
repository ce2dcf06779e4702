import type { Uuid } from "../base/index.js";
import type { LocalConnections, UserEventBatch } from "./local.js";
import { metrics } from "./metrics.js";
import type { Located, OnlineRegistry } from "./registry.js";

/**
 * `read_sync_merge_window` (spec 003 §2.2): within it only the last read mark of a (user,
 * conversation) becomes a read-sync event; the event goes out when the window ends (trailing).
 */
export const READ_SYNC_MERGE_WINDOW_MS = 3000;

/** Sends user events to another node's connections (node RPC PushUserEvents); set by the node's RPC listener. */
export type UserEventForwarder = (to: Located, batch: UserEventBatch) => Promise<void>;

interface Window {
  tenant: Uuid;
  user: Uuid;
  conversation: Uuid;
  readSeq: number;
  /** The highest seq each device marked in this window: a device that marked the event's seq itself gets no echo. */
  marks: Map<string, number>;
  timer: NodeJS.Timeout;
}

/**
 * Read sync across a user's devices (spec 003 §2.2, issue 27): the read seq itself is stored by
 * every MARK_READ (the marking device's unread falls at once, and only grows: the store keeps the
 * max); what is merged is the event that tells the user's other devices. One window per (user,
 * conversation) on the node that took the marks; at its end one READ_SYNC with the highest seq goes
 * to every connection of the user — here and on the nodes the online registry names — except the
 * devices whose own mark in the window reached that seq (the origin never gets its own event
 * echoed). At most once: a node that stops inside a window sends what it holds at stop, and a
 * device that missed the event still reads the seq from its list (PULL_SESSION_LIST).
 */
export class ReadSync {
  private readonly windows = new Map<string, Window>();
  private forwarder: UserEventForwarder | null = null;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly local: LocalConnections,
    private readonly registry: OnlineRegistry,
    private readonly windowMs: number = READ_SYNC_MERGE_WINDOW_MS,
    private readonly log?: (line: string) => void,
  ) {}

  setForwarder(f: UserEventForwarder): void {
    this.forwarder = f;
  }

  /** A device marked a conversation read up to `readSeq` (the stored read seq after its mark). */
  mark(tenant: Uuid, user: Uuid, conversation: Uuid, readSeq: number, originDevice: string): void {
    metrics.readMarks.inc();
    const key = `${tenant}:${user}:${conversation}`;
    let w = this.windows.get(key);
    if (!w) {
      w = { tenant, user, conversation, readSeq, marks: new Map(), timer: setTimeout(() => this.flush(key), this.windowMs) };
      w.timer.unref();
      this.windows.set(key, w);
    } else {
      metrics.readMarksMerged.inc();
    }
    w.readSeq = Math.max(w.readSeq, readSeq);
    w.marks.set(originDevice, Math.max(w.marks.get(originDevice) ?? 0, readSeq));
  }

  /** Windows open now (marks not yet sent as events). */
  get pending(): number {
    return this.windows.size;
  }

  /** Sends every open window's event now (a stopping node) and waits for the sends. */
  async stop(): Promise<void> {
    for (const key of [...this.windows.keys()]) this.flush(key);
    await Promise.allSettled([...this.inFlight]);
  }

  private flush(key: string): void {
    const w = this.windows.get(key);
    if (!w) return;
    this.windows.delete(key);
    clearTimeout(w.timer);
    metrics.readSyncEvents.inc();
    const exceptDevices = [...w.marks].filter(([, seq]) => seq >= w.readSeq).map(([d]) => d);
    const batch: UserEventBatch = { tenant: w.tenant, events: [{ user: w.user, event: { kind: "read", conversation: w.conversation, readSeq: w.readSeq }, exceptDevices }] };
    this.local.pushEvents(batch);
    if (!this.registry.clustered) return;
    const p = this.registry.locate(w.tenant, [w.user])
      .then((located) => Promise.all(located.map((to) => this.forward(to, batch))))
      .then(() => undefined, (err: unknown) => this.log?.(`delivery: read sync of a user: ${err instanceof Error ? err.message : String(err)}`));
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  private async forward(to: Located, batch: UserEventBatch): Promise<void> {
    if (!this.forwarder) {
      metrics.forwarded.inc({ outcome: "failed" });
      return;
    }
    try {
      await this.forwarder(to, batch);
      metrics.forwarded.inc({ outcome: "ok" });
    } catch (err) {
      // once: a read-sync event is a hint, the read seq is in the device's list
      metrics.forwarded.inc({ outcome: "failed" });
      this.log?.(`delivery: read sync to ${to.nodeId}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}
