/**
 * The load generator (issue 27; spec 000's qim-loadgen role): N devices (one user each), G groups of
 * M members, an open-loop send rate R/s from random current members, optional churn (C leaves a
 * second: a member leaves with a LEAVE_GROUP frame and is re-added through the admin API a moment
 * later), for S seconds; then it waits for quiescence and hands what every device recorded to the
 * independent checker (checker.ts).
 */
import { randomUUID } from "node:crypto";
import { GATEWAY_MAX_IN_FLIGHT, MAX_INITIAL_MEMBERS } from "../../core/index.js";
import { check, latencies, quantile, type AckRecord, type History, type MembershipRecord, type Verdict } from "./checker.js";
import { openDevices, LoadDevice } from "./device.js";
import { assertOpenFiles, type Target } from "./target.js";

/** Handshakes in flight while connecting devices. */
const CONNECT_CONCURRENCY = 32;
/** The open-loop scheduler's tick. */
const TICK_MS = 5;
/** A churned member stays out this long before the admin API adds them back. */
const REJOIN_AFTER_MS = 1000;
/** Quiescence: no new arrival for this long (or every due push in) ends the wait … */
const QUIET_MS = 2000;
/** … and the wait ends regardless after this long (what is missing then is reported missing). */
const QUIESCE_MAX_MS = 30_000;

export interface LoadOptions {
  devices: number;
  groups: number;
  members: number;
  /** Sends per second, all groups together (open loop). */
  rate: number;
  durationS: number;
  /** Member leaves per second (0: none). */
  churn: number;
  payloadBytes?: number;
  /**
   * Slow devices: the last `slow` devices stop reading their socket right after AUTH (the node's
   * writes queue up until its push budget stops them). They never send or leave, and the checker
   * leaves them out: the run measures what they do to everyone else.
   */
  slow?: number;
  log?: (line: string) => void;
}

export interface LoadReport {
  options: Omit<LoadOptions, "log">;
  sent: number;
  acked: number;
  failed: number;
  /** Sends the scheduler was due but skipped: the chosen device already had GATEWAY_MAX_IN_FLIGHT requests out. */
  skipped: number;
  leaves: number;
  rejoins: number;
  /** The first few failures (a SEND not acknowledged, a leave or re-add that failed), verbatim. */
  errors: string[];
  deliveries: number;
  /** The slow devices (LoadOptions.slow): how many, and how many of them the node closed (4429). */
  slowDevices: { count: number; closed: number };
  sendAckMs: { p50: number; p99: number };
  endToEndMs: { p50: number; p99: number };
  verdict: Verdict;
}

/** Refuses options no run can satisfy, before anything starts. */
export function validateLoad(o: LoadOptions): void {
  if (o.members > o.devices) throw new Error(`--members ${o.members} is more than --devices ${o.devices}: each member is one device's user`);
  if (o.members < 2) throw new Error("--members must be at least 2 (an owner and one more)");
  if (o.members > MAX_INITIAL_MEMBERS + 1) throw new Error(`--members ${o.members} is more than a group can be created with (${MAX_INITIAL_MEMBERS + 1}, the owner included)`);
}

export async function runLoad(t: Target, o: LoadOptions): Promise<{ report: LoadReport; history: History }> {
  const log = o.log ?? (() => {});
  validateLoad(o);
  assertOpenFiles(o.devices);
  const users = Array.from({ length: o.devices }, () => randomUUID());
  const devices = await openDevices(o.devices, CONNECT_CONCURRENCY, async (i) => LoadDevice.open(t.url, t.ca, await t.sign(users[i]!, `lg${i}`), users[i]!, `lg${i}`));
  log(`${devices.length} devices connected and authenticated`);
  const slowCount = Math.min(o.slow ?? 0, Math.max(0, o.devices - 2));
  const slow = new Set(devices.slice(devices.length - slowCount));
  for (const d of slow) d.pause();
  try {
    const groups: { group: string; members: LoadDevice[]; initial: string[] }[] = [];
    for (let g = 0; g < o.groups; g++) {
      const members = Array.from({ length: o.members }, (_, j) => devices[(g * o.members + j) % o.devices]!);
      const r = await t.admin.createGroup({ tenant: t.tenant, group: "", owner: members[0]!.user, members: members.slice(1).map((d) => d.user) });
      groups.push({ group: r.group, members, initial: members.map((d) => d.user) });
    }
    log(`${groups.length} groups of ${o.members} created`);
    const out = new Set<string>();
    const acks: AckRecord[] = [];
    const membership: MembershipRecord[] = [];
    const counts = { sent: 0, failed: 0, skipped: 0, leaves: 0, rejoins: 0 };
    const errors: string[] = [];
    const inFlight = new Set<Promise<unknown>>();
    const track = (p: Promise<unknown>) => {
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    };
    const payload = Buffer.alloc(o.payloadBytes ?? 64, 0x61);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(Math.random() * xs.length)]!;

    const sendOne = () => {
      const g = pick(groups);
      // a slow device never sends: the scheduler's due send goes to another member
      const senders = slow.size === 0 ? g.members : g.members.filter((m) => !slow.has(m));
      if (senders.length === 0) return void counts.skipped++;
      const d = pick(senders);
      if (out.has(`${g.group}/${d.user}`)) return void counts.skipped++;
      if (d.inFlight >= GATEWAY_MAX_IN_FLIGHT) return void counts.skipped++;
      counts.sent++;
      d.inFlight++;
      const sentAtMs = Date.now();
      track(d.request({ $case: "send", send: { clientMsgNo: randomUUID(), group: g.group, payload, contentType: "application/octet-stream", mentions: [] } }).then((f) => {
        if (f.body?.$case !== "sendAck") throw new Error(`SEND answered ${f.body?.$case}: ${f.body?.$case === "error" ? f.body.error.code : ""}`);
        acks.push({ group: g.group, seq: Number(f.body.sendAck.conversationSeq), messageId: f.body.sendAck.messageId, sender: d.user, sentAtMs, ackAtMs: Date.now() });
      }).catch((err: unknown) => {
        counts.failed++;
        if (errors.length < 5) errors.push(String(err));
      }).finally(() => d.inFlight--));
    };

    /** One leave of a member (not the owner) who is in and has no send out; false when none is (tried again next tick). */
    const churnOne = (): boolean => {
      const g = pick(groups);
      const candidates = g.members.slice(1).filter((d) => !slow.has(d) && !out.has(`${g.group}/${d.user}`) && d.inFlight === 0);
      if (candidates.length === 0) return false;
      const d = pick(candidates);
      const key = `${g.group}/${d.user}`;
      out.add(key);
      counts.leaves++;
      track((async () => {
        const f = await d.request({ $case: "leaveGroup", leaveGroup: { group: g.group } });
        if (f.body?.$case !== "memberListBatch") throw new Error(`LEAVE_GROUP answered ${f.body?.$case}`);
        membership.push({ group: g.group, user: d.user, op: "leave", seq: Number(f.body.memberListBatch.eventSeq) });
        await new Promise((r) => setTimeout(r, REJOIN_AFTER_MS));
        const r = await t.admin.addMembers({ tenant: t.tenant, group: g.group, users: [d.user], dryRun: false });
        if (r.eventConversationSeq === undefined) throw new Error(`the re-add of ${d.user} committed nothing (${r.outcome})`);
        membership.push({ group: g.group, user: d.user, op: "join", seq: Number(r.eventConversationSeq) });
        counts.rejoins++;
        out.delete(key);
      })().catch((err: unknown) => {
        if (errors.length < 5) errors.push(`churn: ${String(err)}`);
      }));
      return true;
    };

    const t0 = Date.now();
    const end = t0 + o.durationS * 1000;
    let due = 0;
    let churnDue = 0;
    while (Date.now() < end) {
      const elapsed = (Date.now() - t0) / 1000;
      for (; due < Math.floor(elapsed * o.rate); due++) sendOne();
      while (churnDue < Math.floor(elapsed * o.churn) && churnOne()) churnDue++;
      await new Promise((r) => setTimeout(r, TICK_MS));
    }
    log(`sending done: ${counts.sent} sent, ${counts.skipped} skipped; waiting for ${inFlight.size} answers and churn`);
    while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    if (errors.length > 0) log(`errors (first ${errors.length}): ${errors.join(" | ")}`);

    // quiescence: every due push in, or nothing new for QUIET_MS
    const history: History = {
      groups: groups.map((g) => ({ group: g.group, initialMembers: g.initial })),
      membership, acks,
      devices: devices.filter((d) => !slow.has(d)).map((d) => ({ device: d.device, user: d.user, arrivals: d.arrivals })),
    };
    const total = () => history.devices.reduce((s, d) => s + d.arrivals.length, 0);
    const quiesceStart = Date.now();
    let lastTotal = -1;
    let lastChange = Date.now();
    for (;;) {
      const v = check(history);
      if (v.missing.count === 0) break;
      const n = total();
      if (n !== lastTotal) {
        lastTotal = n;
        lastChange = Date.now();
      }
      if (Date.now() - lastChange >= QUIET_MS || Date.now() - quiesceStart >= QUIESCE_MAX_MS) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    // a last look for late pushes past a leave or repeats
    await new Promise((r) => setTimeout(r, 500));
    const verdict = check(history);
    const lat = latencies(history);
    const options = { devices: o.devices, groups: o.groups, members: o.members, rate: o.rate, durationS: o.durationS, churn: o.churn, payloadBytes: payload.length, slow: slowCount };
    return {
      history,
      report: {
        options, ...counts, errors, acked: acks.length, deliveries: total(), slowDevices: { count: slowCount, closed: [...slow].filter((d) => d.closed !== null).length },
        sendAckMs: { p50: quantile(lat.ackMs, 0.5), p99: quantile(lat.ackMs, 0.99) },
        endToEndMs: { p50: quantile(lat.endToEndMs, 0.5), p99: quantile(lat.endToEndMs, 0.99) },
        verdict,
      },
    };
  } finally {
    for (const d of devices) d?.close();
  }
}
