import { NODE_RPC_MAX_RECEIVE_BYTES, type KeySpace, type Uuid } from "../base/index.js";
import { SOLO_GATE, unitLeaseKey, type UnitGate } from "../cluster/index.js";
import { HIST_FIELD, leavingUsersOf, recordHistoryParts } from "../conversation/index.js";
import type { DispatchEntry, DispatchLog, DispatchRecord, LogPosition } from "../dispatch/index.js";
import type { RedisStore } from "../store/index.js";
import { deliveryCheckpointKey } from "./keys.js";
import type { DeliveryBatch, DeliveryItem, LocalConnections } from "./local.js";
import { MembersAudience } from "./members.js";
import { metrics } from "./metrics.js";
import { advanceDeliveryCheckpointScript } from "./scripts.js";
import type { Located, OnlineRegistry } from "./registry.js";

/** How often each owned partition is read when nothing kicked it (a commit on this node kicks at once). */
export const DELIVERY_POLL_INTERVAL_MS = 50;
/** Records read per step of a partition (one XRANGE; every recipient of them is located before the next). */
export const DELIVERY_READ_BATCH = 256;
/** Attempts of a batch to another node before its pushes are given up (the devices resync on their next pull). */
export const DELIVERY_FORWARD_ATTEMPTS = 3;

/**
 * The bytes one batch to another node carries at most (entries and recipients): half the node
 * service's request limit (NODE_RPC_MAX_RECEIVE_BYTES), so that its one largest item (a 64 KiB
 * message, base64, with DELIVERY_FORWARD_MAX_USERS recipients) fits too. A step's batch for a
 * node goes as several, one after another, in order.
 */
export const DELIVERY_FORWARD_MAX_BYTES = NODE_RPC_MAX_RECEIVE_BYTES / 2;
/** Recipients of one message in one batch to another node at most (a large group's go in slices of it; ~40 bytes each on the wire). */
export const DELIVERY_FORWARD_MAX_USERS = 10_000;

/** Sends a batch to another node's connections (node RPC Deliver); set by the node's RPC listener. */
export type DeliveryForwarder = (to: Located, batch: DeliveryBatch) => Promise<void>;

export interface DeliveryConsumerOptions {
  pollIntervalMs?: number;
  gate?: UnitGate;
  log?: (line: string) => void;
  /**
   * Where a members record's audience among this node's connections is found: the node's one
   * MembersAudience, which a forwarded Deliver uses too (one cache of member entries per node).
   * Default: one of its own.
   */
  audience?: MembersAudience;
}

/**
 * The delivery consumer (issue 27): on each dispatch partition this node owns, reads the records
 * after its checkpoint in order, finds which recipients are online — here (LocalConnections) or
 * on another node (OnlineRegistry) — pushes each record to the connections here and sends one
 * batch per other node (DeliveryForwarder), then moves the checkpoint. At least once: a crash or
 * a takeover before the checkpoint moved pushes those records again (devices dedupe by
 * message_id); in order per conversation (a conversation is one partition, read in order, and
 * each step's pushes finish before the next step's start). A partition without a checkpoint
 * starts at its end: a device that was online before then catches up by its resume pull.
 */
export class DeliveryConsumer {
  private readonly gate: UnitGate;
  private readonly pollIntervalMs: number;
  private readonly positions = new Map<number, LogPosition>();
  private readonly busy = new Set<number>();
  /**
   * The partitions the next pass reads: the ones a hand-off named, or all (a poll, a kick without
   * records). A pass over every partition read each of them (a MULTI of XINFO STREAM, which carries
   * the first and last records whole, and XRANGE) at every hand-off, when one had new records.
   */
  private wanted: Set<number> | "all" = "all";
  /** Partitions a hand-off named while their drain ran: read again once it ends. */
  private readonly again = new Set<number>();
  private lastFullPass = 0;
  private forwarder: DeliveryForwarder | null = null;
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private running = new Set<Promise<void>>();
  /** A members record's audience among the connections here. */
  private readonly members: MembersAudience;

  constructor(
    private readonly store: RedisStore,
    private readonly keys: KeySpace,
    private readonly log: DispatchLog,
    private readonly local: LocalConnections,
    private readonly registry: OnlineRegistry,
    private readonly opts: DeliveryConsumerOptions = {},
  ) {
    this.gate = opts.gate ?? SOLO_GATE;
    this.pollIntervalMs = opts.pollIntervalMs ?? DELIVERY_POLL_INTERVAL_MS;
    this.members = opts.audience ?? new MembersAudience(store, keys, local);
  }

  setForwarder(f: DeliveryForwarder): void {
    this.forwarder = f;
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await Promise.allSettled([...this.running]);
  }

  /**
   * Records were appended (the relay's low-latency hand-off): read now instead of at the next poll.
   * A large group's members records in hand start finding their audience here at once, while the
   * step reads them from the log (one round trip less between the commit and the push).
   */
  kick(records: readonly DispatchRecord[] = []): void {
    if (this.stopped) return;
    this.members.prefetch(records.filter((r) => r.push === "members" && this.gate.owns("partition", this.log.partitionOf(r.tenant, r.conversation))));
    if (records.length === 0) this.wanted = "all";
    for (const r of records) this.want(this.log.partitionOf(r.tenant, r.conversation));
    this.schedule(0);
  }

  private want(partition: number): void {
    if (this.busy.has(partition)) this.again.add(partition);
    else if (this.wanted !== "all") this.wanted.add(partition);
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.pass(), ms);
    this.timer.unref();
  }

  private pass(): void {
    if (this.stopped) return;
    // every partition at least once per poll interval, however many hand-offs come meanwhile
    const now = Date.now();
    const which = now - this.lastFullPass >= this.pollIntervalMs ? "all" : this.wanted;
    if (which === "all") this.lastFullPass = now;
    this.wanted = new Set();
    const work: Promise<void>[] = [];
    for (let p = 0; p < this.log.identity.partitionCount; p++) {
      if (which !== "all" && !which.has(p)) continue;
      if (this.busy.has(p)) {
        // named by a hand-off and draining: read again when that drain ends
        if (which !== "all") this.again.add(p);
        continue;
      }
      if (!this.gate.owns("partition", p)) {
        this.positions.delete(p);
        continue;
      }
      work.push(this.track(this.drain(p).then(() => undefined)));
    }
    // the poll after a pass reads every partition (records another node appended arrive that way)
    void Promise.allSettled(work).then(() => {
      if (this.stopped) return;
      // hand-offs while it ran: at once; else the poll, which reads every partition
      if (this.wanted === "all" || this.wanted.size > 0) {
        this.schedule(0);
        return;
      }
      // not `wanted = "all"`: a hand-off before the poll reads only what it names (the poll reads
      // every partition by the time since the last full pass)
      this.schedule(this.pollIntervalMs);
    });
  }

  private track(p: Promise<void>): Promise<void> {
    this.running.add(p);
    void p.finally(() => this.running.delete(p));
    return p;
  }

  /** Delivers what the partition holds after the checkpoint (steps of DELIVERY_READ_BATCH), then records where it stopped. */
  async drain(partition: number): Promise<number> {
    if (this.busy.has(partition)) return 0;
    this.busy.add(partition);
    let delivered = 0;
    try {
      let pos = this.positions.get(partition) ?? await this.readCheckpoint(partition);
      // kept, as after a step: an idle partition's poll does not read its checkpoint again every 50 ms
      this.positions.set(partition, pos);
      // what the checkpoint holds now (the read position may move up to the log's low watermark)
      let stored = `${pos.offset}|${pos.id}`;
      for (;;) {
        if (this.stopped) break;
        if (!this.gate.owns("partition", partition)) break;
        const r = await this.log.readFrom(partition, pos, DELIVERY_READ_BATCH);
        if (pos.offset < r.watermarks.low) pos = r.watermarks.lowPosition;
        metrics.checkpointLag.set({ partition: String(partition) }, Math.max(0, r.watermarks.high - pos.offset - r.entries.length));
        if (r.entries.length === 0) break;
        await this.deliver(r.entries);
        delivered += r.entries.length;
        metrics.records.inc(r.entries.length);
        const last = r.entries[r.entries.length - 1]!;
        const next = { offset: last.offset + 1, id: last.id };
        if (!(await this.advance(partition, stored, next))) break;
        pos = next;
        stored = `${next.offset}|${next.id}`;
        this.positions.set(partition, pos);
        if (r.entries.length < DELIVERY_READ_BATCH) break;
      }
    } catch (err) {
      // the position stays where it was: the next pass reads the same records again
      this.positions.delete(partition);
      this.opts.log?.(`delivery: partition ${partition}: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      this.busy.delete(partition);
      // a hand-off named this partition while it drained: its records may be past the last read
      if (this.again.delete(partition) && !this.stopped) {
        this.want(partition);
        this.schedule(0);
      }
    }
    return delivered;
  }

  /**
   * Moves the partition's checkpoint from `from` (as stored) to `to`, fenced by the partition's lease and
   * compared with `from`: false (and the position forgotten, read again next pass) when another
   * consumer moved it first or a newer owner holds the partition — a paused old owner can neither
   * move it back nor past what the new owner has not pushed.
   */
  private async advance(partition: number, from: string, to: LogPosition): Promise<boolean> {
    const fence = this.gate.enter("partition", partition);
    if (!fence) {
      this.positions.delete(partition);
      return false;
    }
    try {
      const key = deliveryCheckpointKey(this.keys, this.log.identity.topicId, partition);
      // no replica acknowledgement (redis.ack_replicas): a checkpoint a failover loses only means
      // pushes again, which devices dedupe — and a WAIT per step would hold the connection
      const { moved, fenced } = await advanceDeliveryCheckpointScript.run(this.store.clientForKey(key), { checkpoint: key, lease: unitLeaseKey(this.keys, "partition", partition) },
        { expected: from, to: `${to.offset}|${to.id}`, owner: fence.owner, token: fence.token });
      if (!moved) {
        this.positions.delete(partition);
        metrics.checkpointRefused.inc({ reason: fenced ? "fenced" : "moved" });
        if (fenced) this.gate.refused("partition", partition, "checkpoint", fence);
      }
      return moved;
    } finally {
      this.gate.leave("partition", partition);
    }
  }

  private async readCheckpoint(partition: number): Promise<LogPosition> {
    const key = deliveryCheckpointKey(this.keys, this.log.identity.topicId, partition);
    const raw = await this.store.clientForKey(key).get(key);
    if (raw) {
      const [offset, id] = raw.split("|");
      return { offset: Number(offset), id: id! };
    }
    // no checkpoint yet: start at the end (what came before is the devices' resume pull)
    const w = await this.log.watermarks(partition);
    const pos = { offset: w.high, id: w.lastId };
    await this.store.clientForKey(key).set(key, `${pos.offset}|${pos.id}`, "NX");
    return pos;
  }

  /** One step: every record's recipients located, pushed here, and sent to the other nodes that hold some. */
  private async deliver(entries: readonly DispatchEntry[]): Promise<void> {
    const here = new Map<Uuid, DeliveryBatch>();
    const there = new Map<string, { to: Located; batches: Map<Uuid, DeliveryBatch> }>();
    const add = (m: Map<Uuid, DeliveryBatch>, item: DeliveryItem, users: Uuid[], members = false) => {
      let b = m.get(item.tenant);
      if (!b) m.set(item.tenant, b = { tenant: item.tenant, items: [] });
      b.items.push(members ? { item, users, members } : { item, users });
    };
    // nobody online here and no other node holding a device (one cached read): nothing to do per
    // recipient — a 100,000-member group's record costs no set of its members then
    const remote = (await this.registry.remoteNodes()).size > 0;
    if (!remote && this.local.size === 0) return;
    // every recipient of the step located once (per tenant), not once per record
    const items: { item: DeliveryItem; audience: Uuid[]; members: boolean }[] = [];
    const byTenant = new Map<Uuid, Set<Uuid>>();
    for (const { record } of entries) {
      // a chunk of a large group's fanout job: its members record carried the pushes
      if (record.push === "none") continue;
      const parts = recordHistoryParts(record);
      const createdAt = Number(parts.fields.get(HIST_FIELD.createdAt));
      if (record.push === "members") {
        metrics.membersRecords.inc();
        items.push({ item: { tenant: record.tenant, conversation: record.conversation, conversationSeq: record.conversationSeq, entry: record.entry, createdAt }, audience: [], members: true });
        continue;
      }
      // spec 000: zero deliveries at or after left_at — a leaver gets no push of the leave itself
      const leaving = leavingUsersOf(parts);
      const audience = leaving ? record.recipients.filter((u) => !leaving.has(u)) : record.recipients;
      if (audience.length === 0) continue;
      items.push({
        item: { tenant: record.tenant, conversation: record.conversation, conversationSeq: record.conversationSeq, entry: record.entry, createdAt },
        audience,
        members: false,
      });
      if (!remote) continue;
      let set = byTenant.get(record.tenant);
      if (!set) byTenant.set(record.tenant, set = new Set());
      for (const u of audience) set.add(u);
    }
    // user → the other nodes that hold a connection of theirs
    const where = new Map<string, Located[]>();
    for (const [tenant, users] of byTenant) {
      for (const l of await this.registry.locate(tenant, [...users])) {
        for (const u of l.users) {
          const k = tenant + u;
          const list = where.get(k);
          if (list) list.push(l); else where.set(k, [l]);
        }
      }
    }
    // a members record goes to every other node holding any connection, which finds its audience
    // among its own (a large group is not looked up member by member in the registry)
    const targets = remote && items.some((i) => i.members) ? await this.registry.remoteTargets() : [];
    // the members records of the step found here, per group at once (one read of its entries)
    const membersItems = this.local.size > 0 ? items.filter((i) => i.members).map((i) => i.item) : [];
    const foundUsers = await this.members.resolveItems(membersItems);
    const found = new Map(membersItems.map((item, i) => [item, foundUsers[i]!]));
    for (const { item, audience, members } of items) {
      if (members) {
        const local = found.get(item) ?? [];
        if (local.length > 0) add(here, item, local);
        for (const to of targets) {
          let t = there.get(to.nodeId);
          if (!t) there.set(to.nodeId, t = { to, batches: new Map() });
          add(t.batches, item, [], true);
        }
        continue;
      }
      const online = this.local.usersOf(item.tenant);
      const local = online.size === 0 ? [] : audience.filter((u) => online.has(u));
      if (local.length > 0) add(here, item, local);
      if (where.size === 0) continue;
      const perNode = new Map<string, { to: Located; users: Uuid[] }>();
      for (const u of audience) {
        for (const l of where.get(item.tenant + u) ?? []) {
          const e = perNode.get(l.nodeId);
          if (e) e.users.push(u); else perNode.set(l.nodeId, { to: l, users: [u] });
        }
      }
      for (const { to, users } of perNode.values()) {
        let t = there.get(to.nodeId);
        if (!t) there.set(to.nodeId, t = { to, batches: new Map() });
        add(t.batches, item, users);
      }
    }
    for (const b of here.values()) this.local.deliver(b);
    await Promise.all([...there.values()].flatMap(({ to, batches }) => [...batches.values()].map(async (b) => {
      for (const part of bounded(b)) await this.forward(to, part);
    })));
  }

  /** One batch to another node (node RPC Deliver), retried a few times, then given up (devices resync). */
  async forward(to: Located, batch: DeliveryBatch): Promise<void> {
    const f = this.forwarder;
    if (!f) {
      metrics.forwarded.inc({ outcome: "failed" });
      return;
    }
    for (let attempt = 1; ; attempt++) {
      try {
        await f(to, batch);
        metrics.forwarded.inc({ outcome: "ok" });
        return;
      } catch (err) {
        if (attempt >= DELIVERY_FORWARD_ATTEMPTS) {
          metrics.forwarded.inc({ outcome: "failed" });
          this.opts.log?.(`delivery: a batch to ${to.nodeId} failed ${attempt} times, its pushes are given up (devices resync): ${err instanceof Error ? err.message : String(err)}`);
          return;
        }
        await new Promise((r) => setTimeout(r, 50 * attempt));
      }
    }
  }
}

/** A batch cut into batches of at most DELIVERY_FORWARD_MAX_BYTES of entries (one item at least each), in order. */
function bounded(batch: DeliveryBatch): DeliveryBatch[] {
  const out: DeliveryBatch[] = [];
  let cur: DeliveryBatch = { tenant: batch.tenant, items: [] };
  let bytes = 0;
  const pieces = batch.items.flatMap((it) => {
    // a message of a large group: its recipients on one node in slices (a user id is 36 bytes on the wire and some)
    if (it.users.length <= DELIVERY_FORWARD_MAX_USERS) return [it];
    const out: typeof batch.items = [];
    for (let i = 0; i < it.users.length; i += DELIVERY_FORWARD_MAX_USERS) out.push({ item: it.item, users: it.users.slice(i, i + DELIVERY_FORWARD_MAX_USERS) });
    return out;
  });
  for (const it of pieces) {
    const size = it.item.entry.length + 40 * it.users.length;
    if (cur.items.length > 0 && bytes + size > DELIVERY_FORWARD_MAX_BYTES) {
      out.push(cur);
      cur = { tenant: batch.tenant, items: [] };
      bytes = 0;
    }
    cur.items.push(it);
    bytes += size;
  }
  if (cur.items.length > 0) out.push(cur);
  return out;
}
