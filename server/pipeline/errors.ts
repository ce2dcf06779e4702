import { Metadata, status, type ServiceError } from "@grpc/grpc-js";
import { cutText, ERROR_CODES, QimError, type QimErrorCode } from "../../core/index.js";

/**
 * The one place where domain errors become gRPC statuses (DESIGN §3), each as ERROR_CODES declares it. The domain code and the
 * offending field travel as metadata (`qim-error-code`, `qim-error-field`) so that clients can
 * tell a version conflict from "membership changed" (both ABORTED) without parsing messages.
 * An unknown error becomes INTERNAL with the request id; its stack goes only to the server log.
 */
const CODE = Object.fromEntries(Object.entries(ERROR_CODES).map(([code, d]) => [code, status[d.grpc]])) as Record<QimErrorCode, status>;

/** ioredis failures that mean "the store is not reachable right now". */
function isStoreUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const e = err as Error & { code?: string };
  return /Connection is closed|Command timed out|MaxRetriesPerRequestError|Stream isn't writeable|connect ECONNREFUSED|CLUSTERDOWN|ClusterAllFailedError|Failed to refresh slots cache|None of startup nodes is available|Too many Cluster redirections/.test(`${e.name} ${e.message}`)
    || e.code === "ECONNREFUSED" || e.code === "ECONNRESET" || e.code === "ETIMEDOUT";
}

export interface MappedError {
  code: status;
  domainCode: QimErrorCode;
  message: string;
  field?: string;
}

/**
 * The most characters of an error's message that go on the wire: the message travels in a gRPC
 * status header, and one over the transport's header limit never arrives — the client waited out
 * its deadline (a class name of 1 MiB echoed in its INVALID_ARGUMENT, found by the admin fuzz).
 */
export const ERROR_MESSAGE_MAX_CHARS = 2000;

export function mapError(err: unknown, requestId: string): MappedError {
  if (err instanceof QimError) {
    const field = typeof err.details.field === "string" ? cutText(err.details.field, 200) : undefined;
    const message = cutText(err.message, ERROR_MESSAGE_MAX_CHARS);
    return { code: CODE[err.code], domainCode: err.code, message, ...(field ? { field } : {}) };
  }
  if (isStoreUnavailable(err)) {
    return { code: status.UNAVAILABLE, domainCode: "UNAVAILABLE", message: `the store is unreachable (request ${requestId})` };
  }
  return { code: status.INTERNAL, domainCode: "INTERNAL", message: `internal error (request ${requestId}); see the server log` };
}

export function toServiceError(m: MappedError, requestId: string): Partial<ServiceError> {
  const metadata = new Metadata();
  metadata.set("qim-error-code", m.domainCode);
  metadata.set("qim-request-id", requestId);
  if (m.field) metadata.set("qim-error-field", m.field);
  return { code: m.code, details: m.message, metadata };
}
