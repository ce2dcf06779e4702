import {
  FailedPreconditionError, InvalidArgumentError, parseUuid, PermissionDeniedError, RTC_CALL_MAX_MS, RTC_PUSH_DEVICES_MAX, RTC_RING_TIMEOUT_MS, RTC_SIGNAL_MAX_PAYLOAD_BYTES,
  RTC_VOIP_PUSH_DAILY_QUOTA, uuidToHex, type KeySpace, type Uuid,
} from "../base/index.js";
import type { RtcEvent } from "../delivery/index.js";
import type { RedisStore } from "../store/index.js";
import { rtcCallKey, rtcVoipKey } from "./keys.js";
import { rtcMetrics as metrics } from "./metrics.js";
import { callStateScript } from "./scripts.js";

/** The kinds of a signal, numbered as the client frames' RtcKind (proto/qim/client/v1). */
export const RTC_KIND = { invite: 1, accept: 2, reject: 3, cancel: 4, end: 5, sdp: 6, busy: 7, timeout: 8 } as const;
export type RtcKindName = keyof typeof RTC_KIND;
const KIND_NAME = new Map<number, RtcKindName>(Object.entries(RTC_KIND).map(([k, v]) => [v, k as RtcKindName]));

/** A signal as it reaches a user's devices. */
export type RtcDelivery = RtcEvent;

/** What an offline callee's devices are pushed (iOS VoIP, Android high priority in production; a log line in the dev stack). Never a badge. */
export interface RtcPush {
  tenant: Uuid;
  user: Uuid;
  device: string;
  callId: string;
  from: Uuid;
  group: Uuid;
}

/** Where VoIP pushes go (spec 003 §5 / §16): pluggable; it must not touch the badge. */
export interface RtcPushSink {
  readonly name: string;
  push(p: RtcPush): Promise<void>;
}

/** The dev stack's sink: one line in the node's log per push. */
export function logPushSink(log: (line: string) => void): RtcPushSink {
  return {
    name: "log",
    async push(p) {
      log(`rtc: VoIP push to ${p.user}/${p.device}: call ${p.callId} from ${p.from} in group ${p.group}`);
    },
  };
}

export interface RtcSignalRequest {
  tenant: Uuid;
  group: Uuid;
  from: Uuid;
  fromDevice: string;
  target: Uuid;
  callId: string;
  /** RTC_KIND's number: invite … sdp (busy and timeout are the node's). */
  kind: number;
  payload: Uint8Array;
}

export type RtcOutcome = "ringing" | "pushed" | "unreachable" | "busy" | "delivered" | "offline";

export interface RtcSignalResult {
  callId: string;
  outcome: RtcOutcome;
  /** Connections on this node and other nodes reached that got it now. */
  devices: number;
}

export interface RtcOptions {
  /** Pushes a signal to a user's devices wherever they are (core/delivery pushToUser). */
  deliver(tenant: Uuid, user: Uuid, event: RtcDelivery): Promise<{ here: number; nodes: number }>;
  /** Whether each user is an ACTIVE member of the group (core/conversation). */
  activeMembers(tenant: Uuid, group: Uuid, users: readonly Uuid[]): Promise<boolean[]>;
  /** A user's devices with a live token, newest first (core/tokens); none without tokens. */
  devicesOf(tenant: Uuid, user: Uuid): Promise<string[]>;
  pushSink: RtcPushSink;
  log?: (line: string) => void;
  now?: () => number;
  /** rtc_ring_timeout (RTC_RING_TIMEOUT_MS). */
  ringTimeoutMs?: number;
  /** rtc_voip_push_daily_quota (RTC_VOIP_PUSH_DAILY_QUOTA). */
  voipDailyQuota?: number;
}

/**
 * A ring's marks outlive the ring timer by this much: the node that took the INVITE finds them at
 * rtc_ring_timeout and tells both sides; if that node died, they expire this much later by themselves.
 */
export const RTC_RING_MARK_GRACE_MS = 5000;

const CALL_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * RTC signalling (spec 003 §5, issue 28): signals between the online connections of two members of
 * a group, passed through and never stored — no mailbox, no list change, no unread. The engine
 * keeps only which call each user is in (lua/rtc/callState: a mark on the user's slot that expires
 * on its own), so that an INVITE to a user in another call answers busy and a ring ends after
 * rtc_ring_timeout (60 s: both sides get RTC_TIMEOUT from the node that took the INVITE; if that
 * node died, the marks still expire). An INVITE to a callee with no device online goes to the push
 * sink, per device within rtc_voip_push_daily_quota (200 a day); the push never touches the badge.
 * The call record is an ordinary message the client sends after the call (the built-in call_record
 * type). Media never crosses the engine.
 */
export class RtcSignalling {
  private readonly rings = new Map<string, NodeJS.Timeout>();
  private readonly now: () => number;

  constructor(private readonly store: RedisStore, private readonly keys: KeySpace, private readonly opts: RtcOptions) {
    this.now = opts.now ?? Date.now;
  }

  async signal(req: RtcSignalRequest): Promise<RtcSignalResult> {
    const name = KIND_NAME.get(req.kind);
    if (name === undefined || name === "busy" || name === "timeout") throw new InvalidArgumentError("kind", "kind is INVITE, ACCEPT, REJECT, CANCEL, END or SDP (BUSY and TIMEOUT come from the node)");
    const callId = String(req.callId).toLowerCase();
    if (!CALL_ID.test(callId)) throw new InvalidArgumentError("call_id", "call_id is a UUID the caller chose for its INVITE");
    if (req.payload.byteLength > RTC_SIGNAL_MAX_PAYLOAD_BYTES) throw new InvalidArgumentError("signal_payload", `signal_payload is at most ${RTC_SIGNAL_MAX_PAYLOAD_BYTES} bytes`);
    const target = parseUuid(req.target, "target_user");
    if (target === req.from) throw new InvalidArgumentError("target_user", "a call is between two users: target_user is another member");
    const active = await this.opts.activeMembers(req.tenant, req.group, [req.from, target]);
    // ADR-0021 §3: the caller cannot tell a missing group from one they are not in
    if (!active[0] || !active[1]) throw new PermissionDeniedError("both users must be ACTIVE members of the group");
    try {
      const r = await this.run(name, { ...req, callId, target });
      metrics.signals.inc({ kind: name, outcome: r.outcome });
      return r;
    } catch (err) {
      metrics.signals.inc({ kind: name, outcome: "refused" });
      throw err;
    }
  }

  /** Ends every ring timer (a stopping node); the marks expire by themselves. */
  stop(): void {
    for (const t of this.rings.values()) clearTimeout(t);
    this.rings.clear();
  }

  private async run(name: RtcKindName, req: RtcSignalRequest & { target: Uuid }): Promise<RtcSignalResult> {
    const { tenant, from, target, callId } = req;
    const event = (signal: number, fromUser: Uuid, fromDevice: string, payload: Uint8Array): RtcDelivery => ({
      kind: "rtc", conversation: req.group, fromUser, fromDevice, callId, signal, payload,
    });
    const deliver = async (to: Uuid, e: RtcDelivery) => {
      const d = await this.opts.deliver(tenant, to, e);
      return d.here + d.nodes;
    };
    const mark = (peer: Uuid, state: "O" | "R") => `${callId}|${uuidToHex(peer)}|${uuidToHex(req.group)}|${state}`;
    const ringMs = this.opts.ringTimeoutMs ?? RTC_RING_TIMEOUT_MS;
    switch (name) {
      case "invite": {
        const markMs = ringMs + RTC_RING_MARK_GRACE_MS;
        const mine = await this.callState(tenant, from, target, { op: "ring", callId, mark: mark(target, "O"), ttlMs: markMs });
        if (mine.status === "RTC_BUSY") throw new FailedPreconditionError(`you are in another call (${mine.callId}): end it first`);
        const theirs = await this.callState(tenant, target, from, { op: "ring", callId, mark: mark(from, "R"), ttlMs: markMs });
        if (theirs.status === "RTC_BUSY") {
          await this.callState(tenant, from, target, { op: "end", callId });
          return { callId, outcome: "busy", devices: 0 };
        }
        this.armRing(tenant, req.group, from, target, callId, ringMs);
        const devices = await deliver(target, event(RTC_KIND.invite, from, req.fromDevice, req.payload));
        if (devices > 0) return { callId, outcome: "ringing", devices };
        return { callId, outcome: await this.pushOffline(tenant, target, { callId, from, group: req.group }) ? "pushed" : "unreachable", devices: 0 };
      }
      case "accept": {
        const mine = await this.callState(tenant, from, target, { op: "answer", callId, ttlMs: RTC_CALL_MAX_MS });
        if (mine.status === "RTC_NO_CALL") throw new FailedPreconditionError(`call ${callId} with that user is not ringing for you (it ended, timed out, or was never made)`);
        await this.callState(tenant, target, from, { op: "answer", callId, ttlMs: RTC_CALL_MAX_MS });
        this.disarm(callId);
        break;
      }
      case "reject": case "cancel": case "end": {
        // only a party ends a call: the sender's own mark must name it with this peer
        const mine = await this.callState(tenant, from, target, { op: "end", callId });
        if (mine.status !== "OK") throw new FailedPreconditionError(`you are not in call ${callId} with that user (it ended, timed out, or was never made)`);
        await this.callState(tenant, target, from, { op: "end", callId });
        this.disarm(callId);
        break;
      }
      case "sdp": {
        const key = rtcCallKey(this.keys, tenant, from);
        if (!(await this.store.clientFor(key).get(key))?.startsWith(`${callId}|${uuidToHex(target)}|`)) throw new FailedPreconditionError(`you are not in call ${callId} with that user`);
        break;
      }
      default:
        throw new InvalidArgumentError("kind", "not a signal a device sends");
    }
    const devices = await deliver(target, event(RTC_KIND[name], from, req.fromDevice, req.payload));
    return { callId, outcome: devices > 0 ? "delivered" : "offline", devices };
  }

  /** `user`'s mark of the call with `peer` (lua/rtc/callState names a call by its id and the peer). */
  private callState(tenant: Uuid, user: Uuid, peer: Uuid, a: { op: "ring" | "answer" | "end"; callId: string; mark?: string; ttlMs?: number }) {
    const key = rtcCallKey(this.keys, tenant, user);
    return callStateScript.run(this.store.clientFor(key), { rtccall: key }, { ...a, callId: `${a.callId}|${uuidToHex(peer)}` });
  }

  /** After the ring timeout, a call still ringing ends: both sides get RTC_TIMEOUT. */
  private armRing(tenant: Uuid, group: Uuid, caller: Uuid, callee: Uuid, callId: string, ringMs: number): void {
    this.disarm(callId);
    const t = setTimeout(() => {
      this.rings.delete(callId);
      void (async () => {
        const key = rtcCallKey(this.keys, tenant, callee);
        const cur = await this.store.clientFor(key).get(key);
        if (cur === null || !cur.startsWith(`${callId}|${uuidToHex(caller)}|`) || !cur.endsWith("|R")) return;
        await Promise.all([this.callState(tenant, caller, callee, { op: "end", callId }), this.callState(tenant, callee, caller, { op: "end", callId })]);
        metrics.timeouts.inc();
        const e = (fromUser: Uuid): RtcDelivery => ({ kind: "rtc", conversation: group, fromUser, fromDevice: "", callId, signal: RTC_KIND.timeout, payload: new Uint8Array(0) });
        await Promise.all([this.opts.deliver(tenant, caller, e(callee)), this.opts.deliver(tenant, callee, e(caller))]);
      })().catch((err: unknown) => this.opts.log?.(`rtc: ending call ${callId} after its ring timeout: ${err instanceof Error ? err.message : String(err)}`));
    }, ringMs);
    t.unref();
    this.rings.set(callId, t);
  }

  private disarm(callId: string): void {
    const t = this.rings.get(callId);
    if (t) clearTimeout(t);
    this.rings.delete(callId);
  }

  /** The callee's devices (newest first, at most RTC_PUSH_DEVICES_MAX), each within its daily quota, to the sink. True when any was pushed. */
  private async pushOffline(tenant: Uuid, user: Uuid, call: { callId: string; from: Uuid; group: Uuid }): Promise<boolean> {
    const devices = (await this.opts.devicesOf(tenant, user)).slice(0, RTC_PUSH_DEVICES_MAX);
    const day = new Date(this.now()).toISOString().slice(0, 10);
    const quota = this.opts.voipDailyQuota ?? RTC_VOIP_PUSH_DAILY_QUOTA;
    let pushed = false;
    for (const device of devices) {
      const key = rtcVoipKey(this.keys, tenant, user, device, day);
      const client = this.store.clientFor(key);
      const [[, n]] = (await client.multi().incr(key).pexpire(key, 2 * 86_400_000).exec()) as [[unknown, number], unknown];
      if (n > quota) {
        metrics.pushes.inc({ result: "quota" });
        continue;
      }
      try {
        await this.opts.pushSink.push({ tenant, user, device, ...call });
        metrics.pushes.inc({ result: "sent" });
        pushed = true;
      } catch (err) {
        metrics.pushes.inc({ result: "failed" });
        this.opts.log?.(`rtc: the push sink ${this.opts.pushSink.name} refused a push to ${user}/${device}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    return pushed;
  }
}
