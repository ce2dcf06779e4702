/**
 * The one request pipeline of the node (issue 25), for every door: principal → deny list → role →
 * validate → handler → audit → error mapping. It knows no transport: a listener adapts its calls
 * to it (admin gRPC, node RPC, the application servers' HTTP API; next the gateway's frames) by
 * saying who the caller is (a principal read from a certificate today, from a signed token
 * tomorrow), how the RPC is declared (roles, mutates), and how an answer or a refusal goes out on
 * its wire (a Surface). Audit records and refusal texts are the same on every door.
 *
 * Cancellation and deadlines: the adapter says when its caller went away (`signal`) and when the
 * caller stops waiting (`deadline`); the handler gets one AbortSignal that fires on either, with a
 * CallAbandonedError as its reason. A call whose deadline passed before its turn (a pipelined HTTP
 * request that waited behind others) is refused before the handler runs. A long read passes the
 * signal down and stops at its next step (`signal.throwIfAborted()`); an admitted mutation is
 * never stopped half-way. Calls that ended so are counted (qim_server_calls_abandoned_total).
 */
import { randomUUID } from "node:crypto";
import { status } from "@grpc/grpc-js";
import { CallAbandonedError, InvalidArgumentError } from "../../core/index.js";
import type { AuditRecord } from "../audit.js";
import { allowed, type Principal, type Role } from "./auth.js";
import { mapError, type MappedError } from "./errors.js";
import { metrics } from "../metrics.js";

const callsAbandoned = metrics.callsAbandoned;

/** The status names the audit log records (grpc status codes are the node's canonical codes, errors.ts). */
export const STATUS_NAME = Object.fromEntries(Object.entries(status).filter(([, v]) => typeof v === "number").map(([k, v]) => [v, k])) as Record<number, string>;

/** A request that could not be decoded on its wire: refused INVALID_ARGUMENT(request) after it is authorised and audited. */
export class UndecodableRequest {
  constructor(readonly message: string, readonly reason: string, readonly bytes: number) {}
}

/** Thrown by `admit()` when the caller's certificate was put on the deny list after the call began. */
class RevokedDuringCall extends Error {}

/** One call as the pipeline sees it. */
export interface PipelineCall {
  /** The name the audit log and the server log give it (a gRPC method path, "POST /message/sync"). */
  rpc: string;
  roles: readonly Role[];
  /** Audited whatever its outcome (refusals always are). */
  mutates: boolean;
  principal: Principal | null;
  /** The request as audited; read when a record is written. */
  arguments(): unknown;
  /** The request, for the validate step (an UndecodableRequest is refused). */
  request?: unknown;
  /** When the call began (process.hrtime.bigint()), for its audited duration; default: now. */
  started?: bigint;
  /** The id its answer already carries (an HTTP header); default: a new one. */
  requestId?: string;
  /** Fires when the caller went away (a cancelled gRPC call, a closed HTTP connection). */
  signal?: AbortSignal;
  /** When the caller stops waiting, in ms since the epoch (a gRPC deadline); absent or Infinity: never. */
  deadline?: number;
}

/** How a listener answers on its wire. */
export interface Surface {
  /** Sends a refusal or error status (PERMISSION_DENIED, INTERNAL for an audit log that failed, …). */
  refuse(m: MappedError, requestId: string): void;
  /** Why the caller's role may not call the RPC, in this door's words (default: the admin API's). */
  forbidden?(p: Principal | null, rpc: string): string;
  /**
   * An error of the handler, mapped for this door: what the audit records, the log line (null:
   * none) and the answer. Default: errors.ts mapError, answered with refuse().
   */
  failure?(err: unknown, requestId: string, rpc: string): { result: string; detail: string; log: string | null; reply(): void };
}

export interface PipelineOptions {
  /** Appends one audit record; resolves once it is durable. Absent: the door is not audited (node RPC: the engine's own traffic). */
  audit?: (rec: Omit<AuditRecord, "time">) => Promise<void>;
  /** Revoked certificates (SHA-256 fingerprints). Absent: none is refused. */
  revoked?: (fingerprint: string) => boolean;
  log(line: string): void;
}

/** What a handler gets: who calls, the admission check for calls that do not end by themselves, the request id. */
export interface Admitted {
  principal: Principal;
  /** Asks again whether the caller may go on (before each event an open-ended stream sends); throws when revoked meanwhile. */
  admit(): void;
  requestId: string;
  /** Fires when the caller went away or its deadline passed (reason: a CallAbandonedError); long reads stop on it. */
  signal: AbortSignal;
}

/** What a handler hands back: what to audit (mutations), and how to answer once that is written. */
export interface HandlerEnd {
  detail?: string | undefined;
  answer(): void;
}

export class Pipeline {
  constructor(private readonly opts: PipelineOptions) {}

  /** A pipeline on the same audit log and deny list that audits nothing and revokes nothing (node RPC). */
  unaudited(): Pipeline {
    return new Pipeline({ log: this.opts.log });
  }

  run(call: PipelineCall, surface: Surface, body: (a: Admitted) => Promise<HandlerEnd>): void {
    const { log } = this.opts;
    const requestId = call.requestId ?? randomUUID();
    const started = call.started ?? process.hrtime.bigint();
    const elapsed = () => Number(process.hrtime.bigint() - started) / 1e6;
    const { principal, rpc } = call;
    const audit = this.opts.audit;
    const revoked = this.opts.revoked;
    const record = async (result: string, detail: string) => {
      if (!audit) return;
      await audit({
        principal: principal?.name ?? "", role: principal?.role ?? "", rpc, arguments: call.arguments(),
        result, detail, durationMs: elapsed(), requestId, fingerprint: principal?.fingerprint ?? "",
      });
    };
    const refuse = (m: MappedError) => surface.refuse(m, requestId);
    const refuseRevoked = async (p: Principal) => {
      await record("PERMISSION_DENIED", `certificate revoked: ${p.fingerprint} is on the deny list`);
      refuse({ code: status.PERMISSION_DENIED, domainCode: "PERMISSION_DENIED", message: `permission denied: certificate revoked (SHA-256 ${p.fingerprint} of ${p.name} is on the server's deny list)` });
    };
    // one signal for the handler: the caller went away, or its deadline passed. Made when the
    // handler first asks for it: most handlers never do (a device's SEND), and a controller, a
    // signal and a listener on the caller's signal per request were 2 % of the node's CPU under
    // bench/gateway's sends
    let abandon: AbortController | undefined;
    // a transport that enforces the deadline itself (grpc-js) reports it as its caller gone, maybe
    // before our timer fires: past the deadline (to its millisecond), it is the deadline
    const pastDeadline = () => call.deadline !== undefined && Date.now() + 1 >= call.deadline;
    const onGone = () => abandon!.abort(new CallAbandonedError(pastDeadline() ? "deadline" : "cancelled", elapsed()));
    let deadlineTimer: NodeJS.Timeout | undefined;
    const signal = (): AbortSignal => {
      if (abandon) return abandon.signal;
      abandon = new AbortController();
      if (call.signal?.aborted) onGone();
      else call.signal?.addEventListener("abort", onGone, { once: true });
      if (call.deadline !== undefined && Number.isFinite(call.deadline) && !abandon.signal.aborted) {
        const ms = call.deadline - Date.now();
        if (ms <= 0) abandon.abort(new CallAbandonedError("deadline", elapsed()));
        // a timer beyond setTimeout's range (~24.8 days) is no deadline in practice
        else if (ms < 2 ** 31) deadlineTimer = setTimeout(() => abandon!.abort(new CallAbandonedError("deadline", elapsed())), ms);
      }
      return abandon.signal;
    };
    const settled = () => {
      clearTimeout(deadlineTimer);
      if (abandon) call.signal?.removeEventListener("abort", onGone);
    };
    (async () => {
      if (principal && principal.fingerprint && revoked?.(principal.fingerprint)) {
        // revoked: refused before the role is even looked at, whatever the RPC
        await refuseRevoked(principal);
        return;
      }
      if (!principal || !allowed(call.roles, principal)) {
        const why = surface.forbidden ? surface.forbidden(principal, rpc)
          : !principal ? "no client certificate subject"
            : principal.role === null ? `certificate of ${principal.name} names no known role (OU)`
              : `role ${principal.role} may not call ${rpc}`;
        await record("PERMISSION_DENIED", why);
        refuse({ code: status.PERMISSION_DENIED, domainCode: "PERMISSION_DENIED", message: `permission denied: ${why}` });
        return;
      }
      try {
        if (call.request instanceof UndecodableRequest) {
          throw new InvalidArgumentError("request", `the request is not a valid ${call.request.message} message: ${call.request.reason}`);
        }
        const admit = () => {
          if (principal.fingerprint && revoked?.(principal.fingerprint)) throw new RevokedDuringCall();
        };
        // its caller already gone, or its deadline passed while it waited its turn: the handler never runs
        if (call.signal?.aborted) throw new CallAbandonedError(pastDeadline() ? "deadline" : "cancelled", elapsed());
        if (call.deadline !== undefined && Date.now() >= call.deadline) throw new CallAbandonedError("deadline", elapsed());
        const { detail, answer } = await body({ principal, admit, requestId, get signal() { return signal(); } });
        if (call.mutates) await record("OK", detail ?? "");
        answer();
      } catch (err) {
        if (err instanceof CallAbandonedError) callsAbandoned.inc({ rpc, reason: err.reason });
        if (err instanceof RevokedDuringCall) {
          await refuseRevoked(principal);
          return;
        }
        if (surface.failure) {
          const f = surface.failure(err, requestId, rpc);
          if (f.log !== null) log(f.log);
          if (call.mutates) await record(f.result, f.detail);
          f.reply();
          return;
        }
        const m = mapError(err, requestId);
        // a bug gets its stack; an unreachable store one line (a dashboard retries every few seconds)
        if (m.code === status.INTERNAL) log(`request ${requestId} ${rpc} failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
        else if (m.code === status.UNAVAILABLE) log(`request ${requestId} ${rpc} failed: ${err instanceof Error ? err.message : String(err)}`);
        if (call.mutates) await record(STATUS_NAME[m.code] ?? String(m.code), m.message);
        refuse(m);
      }
    })().finally(settled).catch((err: unknown) => {
      // the audit log could not be written: the answer must not pretend otherwise
      log(`request ${requestId} ${rpc}: audit log write failed: ${err instanceof Error ? err.message : String(err)}`);
      refuse({ code: status.INTERNAL, domainCode: "INTERNAL", message: `audit log unavailable (request ${requestId})` });
    });
  }
}
