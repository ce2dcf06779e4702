/**
 * The JSON result of `audit tail`: the entries as the server recorded them (admin-api/audit.ts
 * writes them), declared here as the CLI's contract.
 */
import type { AuditEntry } from "../../admin-api/client.js";

export interface AuditEntryResult {
  /** RFC 3339. */
  time: string;
  /** The client certificate's CN; "" for a refused TLS handshake (the server cannot name it). */
  principal: string;
  role: string;
  /** The gRPC method, e.g. /qim.admin.v1.GroupService/AddMembers, or tls-handshake. */
  rpc: string;
  /** The request as recorded (bounded: docs/operator-guide.md "audit tail"): free-form JSON. */
  arguments: unknown;
  /** OK or the status name of the refusal. */
  result: string;
  detail: string;
  durationMs: number;
  requestId: string;
  /** SHA-256 of the client certificate, "AA:BB:…"; "" when none was presented. */
  fingerprint: string;
}

export interface AuditTailResult {
  /** Oldest first. */
  entries: AuditEntryResult[];
}

export function auditEntryResult(e: AuditEntry): AuditEntryResult {
  let args: unknown = e.argumentsJson;
  try {
    args = JSON.parse(e.argumentsJson);
  } catch {
    // kept as the text the server sent
  }
  return {
    time: e.time,
    principal: e.principal,
    role: e.role,
    rpc: e.rpc,
    arguments: args,
    result: e.result,
    detail: e.detail,
    durationMs: e.durationMs,
    requestId: e.requestId,
    fingerprint: e.fingerprint,
  };
}
