/**
 * The JSON result of `audit tail`: the entries as the server recorded them (server/audit.ts
 * writes them), declared here as the CLI's contract (cli/result.ts says how).
 */
import type { AuditEntry } from "../../admin-api/client.js";
import { resultFrom } from "../result.js";

/** The request as the server recorded it: its JSON, or the text itself when it is not JSON. */
function parsedArguments(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return json;
  }
}

export const auditEntryResult = resultFrom<AuditEntry>()({
  /** RFC 3339. */
  time: "wire",
  /** The client certificate's CN; "" for a refused TLS handshake (the server cannot name it). */
  principal: "wire",
  role: "wire",
  /** The gRPC method, e.g. /qim.admin.v1.GroupService/AddMembers, or tls-handshake. */
  rpc: "wire",
  /** The request as recorded (bounded: docs/operator-guide.md "audit tail"): free-form JSON. */
  arguments: (e): unknown => parsedArguments(e.argumentsJson),
  /** OK or the status name of the refusal. */
  result: "wire",
  detail: "wire",
  durationMs: "wire",
  requestId: "wire",
  /** SHA-256 of the client certificate, "AA:BB:…"; "" when none was presented. */
  fingerprint: "wire",
});
export type AuditEntryResult = ReturnType<typeof auditEntryResult>;

export interface AuditTailResult {
  /** Oldest first. */
  entries: AuditEntryResult[];
}
