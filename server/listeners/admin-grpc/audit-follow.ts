/**
 * AuditService.FollowAudit: the audit log as it is written. The log hands each durable batch to
 * its followers in order (admin-api/audit.ts), rotations included, so the stream needs no file
 * polling and cannot miss or repeat a record across a rotation. A client that does not read is
 * not followed for ever: past FOLLOW_BEHIND_MAX queued entries its stream ends (follow again).
 */
import type { ServerWritableStream } from "@grpc/grpc-js";
import { TAIL_MAX_BYTES, type AuditLog, type AuditRecord } from "../../audit.js";
import type { AuditEntry, FollowAuditRequest, FollowAuditResponse } from "../../../admin-api/gen/qim/admin/v1/audit.js";

/** Entries a follower may have queued (written to the log, not yet taken by its client). */
export const FOLLOW_BEHIND_MAX = 10_000;

export function auditEntryOut(e: AuditRecord): AuditEntry {
  return {
    time: e.time, principal: e.principal, role: e.role, rpc: e.rpc, argumentsJson: JSON.stringify(e.arguments),
    result: e.result, detail: e.detail, durationMs: e.durationMs, requestId: e.requestId, fingerprint: e.fingerprint,
  };
}

/** Entries cut into messages of at most about TAIL_MAX_BYTES (a gRPC client refuses 4 MiB by default). */
function messages(records: readonly AuditRecord[]): FollowAuditResponse[] {
  const out: FollowAuditResponse[] = [];
  let entries: AuditEntry[] = [];
  let bytes = 0;
  for (const r of records) {
    const e = auditEntryOut(r);
    const size = e.argumentsJson.length + e.detail.length + 512;
    if (entries.length > 0 && bytes + size > TAIL_MAX_BYTES) {
      out.push({ entries });
      entries = [];
      bytes = 0;
    }
    entries.push(e);
    bytes += size;
  }
  if (entries.length > 0) out.push({ entries });
  return out;
}

export type FollowEnd = "cancelled" | "shutdown" | "behind";

/**
 * Streams `limit` newest entries (one message, sent at once even when empty), then every batch
 * the log writes, until the client cancels, the log's followers are stopped (shutdown) or the
 * client falls FOLLOW_BEHIND_MAX entries behind. `admit` runs before every message (a certificate
 * revoked meanwhile gets nothing more): what it throws rejects the promise.
 */
export function followAudit(log: AuditLog, call: ServerWritableStream<FollowAuditRequest, FollowAuditResponse>, limit: number, admit: () => void): Promise<FollowEnd> {
  return new Promise((resolve, reject) => {
    const queue: FollowAuditResponse[] = [];
    let queued = 0;
    let blocked = false;
    let done = false;
    let stop = () => {};
    const finish = (end: FollowEnd | { error: unknown }) => {
      if (done) return;
      done = true;
      stop();
      call.off("cancelled", onCancelled);
      if (typeof end === "string") resolve(end);
      else reject(end.error);
    };
    const onCancelled = () => finish("cancelled");
    const pump = () => {
      while (!done && !blocked && queue.length > 0) {
        try {
          admit();
        } catch (error) {
          finish({ error });
          return;
        }
        const m = queue.shift()!;
        queued -= m.entries.length;
        if (!call.write(m)) {
          blocked = true;
          call.once("drain", () => {
            blocked = false;
            pump();
          });
        }
      }
    };
    const enqueue = (records: readonly AuditRecord[], first = false) => {
      const ms = messages(records);
      if (first && ms.length === 0) ms.push({ entries: [] });
      for (const m of ms) {
        queue.push(m);
        queued += m.entries.length;
      }
      if (queued > FOLLOW_BEHIND_MAX) finish("behind");
      else pump();
    };
    if (call.cancelled) return resolve("cancelled");
    call.on("cancelled", onCancelled);
    // batches written between the follow's start and its first answer reaching us wait for it
    let early: (readonly AuditRecord[])[] | null = [];
    const records = (batch: readonly AuditRecord[]) => {
      if (done) return;
      if (early) early.push(batch);
      else enqueue(batch);
    };
    log.follow(limit, { records, closed: () => finish("shutdown") }).then(({ initial, stop: s }) => {
      stop = s;
      if (done) return s();
      enqueue(initial, true);
      const waiting = early!;
      early = null;
      for (const b of waiting) if (!done) enqueue(b);
    }, (error: unknown) => finish({ error }));
  });
}
