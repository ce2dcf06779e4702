/**
 * AuditService.FollowAudit: the audit log as it is written. The log hands each durable batch to
 * its followers in order (server/audit.ts), rotations included, so the stream needs no file
 * polling and cannot miss or repeat a record across a rotation. A client that does not read is
 * not followed for ever: past FOLLOW_BEHIND_MAX queued entries its stream ends (follow again).
 */
import type { ServerWritableStream } from "@grpc/grpc-js";
import { TAIL_MAX_BYTES, type AuditLog, type AuditRecord } from "../../audit.js";
import type { AuditEntry, FollowAuditRequest, FollowAuditResponse } from "../../../admin-api/gen/qim/admin/v1/audit.js";
import { openEndedStream } from "../../pipeline/stream.js";

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
 * revoked meanwhile gets nothing more): what it throws rejects the promise. The stream itself is
 * the pipeline's open-ended stream (server/pipeline/stream.ts).
 */
export function followAudit(log: AuditLog, call: ServerWritableStream<FollowAuditRequest, FollowAuditResponse>, limit: number, admit: () => void): Promise<FollowEnd> {
  return openEndedStream<FollowAuditResponse, Exclude<FollowEnd, "cancelled">>(call, admit, (out) => {
    const enqueue = (records: readonly AuditRecord[], first = false) => {
      const ms = messages(records);
      if (first && ms.length === 0) ms.push({ entries: [] });
      for (const m of ms) out.send(m, m.entries.length);
      if (out.queued > FOLLOW_BEHIND_MAX) out.end("behind");
    };
    // batches written between the follow's start and its first answer reaching us wait for it
    let early: (readonly AuditRecord[])[] | null = [];
    const records = (batch: readonly AuditRecord[]) => {
      if (out.done) return;
      if (early) early.push(batch);
      else enqueue(batch);
    };
    return log.follow(limit, { records, closed: () => out.end("shutdown") }).then(({ initial, stop }) => {
      if (!out.done) {
        enqueue(initial, true);
        const waiting = early!;
        early = null;
        for (const b of waiting) if (!out.done) enqueue(b);
      }
      return stop;
    });
  });
}
