/**
 * The load generator's independent checker (issue 27, "Load generator and benchmark"): it reads only
 * what the devices recorded (every SEND_ACK, every MESSAGE with its arrival time) and what the load
 * generator itself did to membership (the leave's MEMBER_LIST_BATCH event seq, the re-add's
 * event_conversation_seq), never the node's state. Every device here is online for the whole run,
 * so "online and in the group at that time" is "in the group at that seq".
 *
 * Membership is by conversation seq (spec 000's leave boundary): an initial member is in from seq 0;
 * a leave at seq L ends the interval before L (the leaver gets no push of L or later); a re-add at
 * seq J starts a new one after J. A normal message at seq s is due to every device of every user
 * whose interval holds s; a push of any seq in [L, J) to the leaver is a delivery past the leave.
 */

export interface AckRecord {
  group: string;
  seq: number;
  messageId: string;
  sender: string;
  sentAtMs: number;
  ackAtMs: number;
}

export interface MembershipRecord {
  group: string;
  user: string;
  op: "leave" | "join";
  /** The event's conversation seq. */
  seq: number;
}

export interface Arrival {
  group: string;
  seq: number;
  messageId: string;
  /** "normal" or "control" (a membership event pushed like a message). */
  kind: string;
  createdAtMs: number;
  arrivedAtMs: number;
}

export interface DeviceRecord {
  device: string;
  user: string;
  arrivals: Arrival[];
}

export interface History {
  groups: { group: string; initialMembers: string[] }[];
  membership: MembershipRecord[];
  acks: AckRecord[];
  devices: DeviceRecord[];
}

/** At most this many examples of each kind of failure are kept in a verdict (the counts are whole). */
export const CHECKER_SAMPLES = 10;

export interface Verdict {
  ok: boolean;
  /** (message, device) pairs due: each committed normal message × each device of a member at its seq. */
  expected: number;
  /** Of those, how many arrived (at least once). */
  arrived: number;
  /** arrived / expected (1 when nothing was due). */
  arrivalRate: number;
  /** Arrivals of a message id a device had already received (allowed: at least once, dedupable). */
  duplicates: number;
  missing: { count: number; samples: string[] };
  afterLeave: { count: number; samples: string[] };
  inversions: { count: number; samples: string[] };
  orphans: { count: number; samples: string[] };
}

/** Half-open seq intervals [from, to) during which `user` is a member of `group`. */
function intervals(h: History): Map<string, [number, number][]> {
  const out = new Map<string, [number, number][]>();
  const key = (g: string, u: string) => `${g}/${u}`;
  for (const g of h.groups) for (const u of g.initialMembers) out.set(key(g.group, u), [[0, Infinity]]);
  const events = [...h.membership].sort((a, b) => a.seq - b.seq);
  for (const e of events) {
    const list = out.get(key(e.group, e.user)) ?? [];
    const open = list.at(-1);
    if (e.op === "leave" && open && open[1] === Infinity) open[1] = e.seq;
    // a member re-added at J sees what follows J
    else if (e.op === "join" && !(open && open[1] === Infinity)) list.push([e.seq + 1, Infinity]);
    out.set(key(e.group, e.user), list);
  }
  return out;
}

const inside = (ivs: [number, number][] | undefined, seq: number) => (ivs ?? []).some(([from, to]) => seq >= from && seq < to);

export function check(h: History): Verdict {
  const member = intervals(h);
  const acked = new Map<string, AckRecord>();
  for (const a of h.acks) acked.set(a.messageId, a);
  const events = new Set(h.membership.map((e) => `${e.group}#${e.seq}`));
  const bad = () => ({ count: 0, samples: [] as string[] });
  const v: Verdict = { ok: false, expected: 0, arrived: 0, arrivalRate: 1, duplicates: 0, missing: bad(), afterLeave: bad(), inversions: bad(), orphans: bad() };
  const note = (x: { count: number; samples: string[] }, s: string) => {
    x.count++;
    if (x.samples.length < CHECKER_SAMPLES) x.samples.push(s);
  };
  for (const d of h.devices) {
    const seen = new Set<string>();
    const last = new Map<string, number>();
    for (const m of d.arrivals) {
      if (seen.has(m.messageId)) {
        v.duplicates++;
        continue;
      }
      seen.add(m.messageId);
      if (m.kind === "normal" ? !acked.has(m.messageId) : !events.has(`${m.group}#${m.seq}`)) {
        note(v.orphans, `${d.device}: ${m.kind} ${m.messageId} at ${m.group}#${m.seq}`);
      }
      const prev = last.get(m.group) ?? 0;
      if (m.seq <= prev) note(v.inversions, `${d.device}: ${m.group} seq ${m.seq} after ${prev}`);
      last.set(m.group, Math.max(prev, m.seq));
      if (!inside(member.get(`${m.group}/${d.user}`), m.seq) && !isOwnJoin(h, m, d.user)) {
        note(v.afterLeave, `${d.device}: ${m.group}#${m.seq} while not a member`);
      }
    }
    for (const a of h.acks) {
      if (!inside(member.get(`${a.group}/${d.user}`), a.seq)) continue;
      v.expected++;
      if (seen.has(a.messageId)) v.arrived++;
      else note(v.missing, `${d.device}: ${a.group}#${a.seq} ${a.messageId}`);
    }
  }
  v.arrivalRate = v.expected === 0 ? 1 : v.arrived / v.expected;
  v.ok = v.missing.count === 0 && v.afterLeave.count === 0 && v.inversions.count === 0 && v.orphans.count === 0;
  return v;
}

/** The re-add's own CONTROL message may reach the re-added member (it names them). */
function isOwnJoin(h: History, m: Arrival, user: string): boolean {
  return m.kind !== "normal" && h.membership.some((e) => e.op === "join" && e.user === user && e.group === m.group && e.seq === m.seq);
}

/** The q-quantile of `xs` (nearest rank); NaN when empty. */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

/** SEND_ACK latency (ack − send) and end to end (arrival − created_at, the same host's clock), first arrival of each (message, device). */
export function latencies(h: History): { ackMs: number[]; endToEndMs: number[] } {
  const ackMs = h.acks.map((a) => a.ackAtMs - a.sentAtMs);
  const endToEndMs: number[] = [];
  for (const d of h.devices) {
    const seen = new Set<string>();
    for (const m of d.arrivals) {
      if (m.kind !== "normal" || seen.has(m.messageId)) continue;
      seen.add(m.messageId);
      endToEndMs.push(m.arrivedAtMs - m.createdAtMs);
    }
  }
  return { ackMs, endToEndMs };
}
