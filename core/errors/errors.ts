/**
 * Domain errors with stable codes. core knows nothing of gRPC; the admin API maps these codes to
 * status codes in one place and the CLI maps them to exit codes.
 */
/**
 * Every domain error code, declared once with the gRPC status the admin API answers it with and
 * the class of CLI exit code qimctl exits with (cli/exit-codes.ts turns the class into its number:
 * USAGE 2, NOT_FOUND 3, CONFLICT 4, CONNECTION 5, AUTH 6, INTERNAL 1). A module that needs a new
 * code adds one line here; the admin API's mapping and the CLI's exit codes follow from it.
 */
export const ERROR_CODES = {
  INVALID_ARGUMENT: { grpc: "INVALID_ARGUMENT", exit: "USAGE" },
  NOT_FOUND: { grpc: "NOT_FOUND", exit: "NOT_FOUND" },
  ALREADY_EXISTS: { grpc: "ALREADY_EXISTS", exit: "CONFLICT" },
  PERMISSION_DENIED: { grpc: "PERMISSION_DENIED", exit: "AUTH" },
  FAILED_PRECONDITION: { grpc: "FAILED_PRECONDITION", exit: "CONFLICT" },
  VERSION_CONFLICT: { grpc: "ABORTED", exit: "CONFLICT" },
  MEMBERSHIP_CHANGED: { grpc: "ABORTED", exit: "CONFLICT" },
  /**
   * A client_message_id reused for a message with other content (issue 24). ALREADY_EXISTS, not
   * FAILED_PRECONDITION: the message the client asks to create under that id exists, and no change
   * of state will ever make the request succeed; the client must pick a new id.
   */
  IDEMPOTENCY_CONFLICT: { grpc: "ALREADY_EXISTS", exit: "CONFLICT" },
  /** A registry change made against a version of the tenant's message-type registry that another change replaced (core/registry, issue 29). */
  REGISTRY_VERSION_CONFLICT: { grpc: "ABORTED", exit: "CONFLICT" },
  /** A rate the engine holds (a room's room_msg_rate, spec 003 §1.5) refused the call: nothing was done; retry after `retryAfterMs` (details). */
  RATE_LIMITED: { grpc: "RESOURCE_EXHAUSTED", exit: "CONFLICT" },
  UNAVAILABLE: { grpc: "UNAVAILABLE", exit: "CONNECTION" },
  /** The unit a request names (a relay bucket, a partition, a user's slot) is another node's, or moving: retry at the owner (core/cluster StaleOwnerError). */
  STALE_OWNER: { grpc: "UNAVAILABLE", exit: "CONNECTION" },
  UNIMPLEMENTED: { grpc: "UNIMPLEMENTED", exit: "CONFLICT" },
  /**
   * The caller went away before its call ended (issue 25): a read stopped at its next step. An
   * admitted mutation is never stopped half-way (it runs to its end; a retry is answered as one).
   */
  CANCELLED: { grpc: "CANCELLED", exit: "CONNECTION" },
  /** The caller's deadline passed before its call ended: refused before the handler ran, or a read stopped at its next step. */
  DEADLINE_EXCEEDED: { grpc: "DEADLINE_EXCEEDED", exit: "CONNECTION" },
  INTERNAL: { grpc: "INTERNAL", exit: "INTERNAL" },
  /** A device token that does not verify: malformed, unknown key, bad signature, wrong tenant or claims (core/tokens, issue 27). */
  TOKEN_INVALID: { grpc: "UNAUTHENTICATED", exit: "AUTH" },
  /** A device token past its expiry (core/tokens). */
  TOKEN_EXPIRED: { grpc: "UNAUTHENTICATED", exit: "AUTH" },
  /** A device token revoked by its id or its device (core/tokens). */
  TOKEN_REVOKED: { grpc: "UNAUTHENTICATED", exit: "AUTH" },
} as const satisfies Record<string, { grpc: GrpcStatusName; exit: ExitClass }>;

export type QimErrorCode = keyof typeof ERROR_CODES;

/** gRPC status names (grpc/doc/statuscodes.md), the words ERROR_CODES answers in. */
export type GrpcStatusName =
  | "OK" | "CANCELLED" | "UNKNOWN" | "INVALID_ARGUMENT" | "DEADLINE_EXCEEDED" | "NOT_FOUND" | "ALREADY_EXISTS" | "PERMISSION_DENIED"
  | "RESOURCE_EXHAUSTED" | "FAILED_PRECONDITION" | "ABORTED" | "OUT_OF_RANGE" | "UNIMPLEMENTED" | "INTERNAL" | "UNAVAILABLE" | "DATA_LOSS"
  | "UNAUTHENTICATED";

/** The classes of qimctl's exit codes that a domain error can end in. */
export type ExitClass = "USAGE" | "NOT_FOUND" | "CONFLICT" | "CONNECTION" | "AUTH" | "INTERNAL";

export function isQimErrorCode(code: string): code is QimErrorCode {
  return Object.hasOwn(ERROR_CODES, code);
}

export class QimError extends Error {
  readonly code: QimErrorCode;
  readonly details: Record<string, unknown>;
  constructor(code: QimErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = "QimError";
    this.code = code;
    this.details = details;
  }
}

/** Bad input; `field` names the offending input so that callers can point at it. */
/**
 * A call given up because its caller went away ("cancelled") or its deadline passed ("deadline").
 * The pipeline aborts a call's AbortSignal with it; a long read calls `signal.throwIfAborted()`
 * between its steps and so ends with it.
 */
export class CallAbandonedError extends QimError {
  constructor(readonly reason: "cancelled" | "deadline", elapsedMs: number) {
    super(reason === "cancelled" ? "CANCELLED" : "DEADLINE_EXCEEDED",
      reason === "cancelled" ? `the caller went away after ${Math.round(elapsedMs)} ms; the call stopped` : `the call's deadline passed after ${Math.round(elapsedMs)} ms; the call stopped`,
      { reason });
    this.name = "CallAbandonedError";
  }
}

export class InvalidArgumentError extends QimError {
  readonly field: string;
  constructor(field: string, message: string) {
    super("INVALID_ARGUMENT", message, { field });
    this.name = "InvalidArgumentError";
    this.field = field;
  }
}

export class NotFoundError extends QimError {
  constructor(what: string, id: string) {
    super("NOT_FOUND", `${what} ${id} not found`, { what, id });
    this.name = "NotFoundError";
  }
}

export class AlreadyExistsError extends QimError {
  constructor(what: string, id: string) {
    super("ALREADY_EXISTS", `${what} ${id} already exists`, { what, id });
    this.name = "AlreadyExistsError";
  }
}

/**
 * ADR-0021 §3: a user who was never a member gets PERMISSION_DENIED, with no difference between
 * "no right" and "does not exist" — so the message never says which.
 */
export class PermissionDeniedError extends QimError {
  constructor(message = "permission denied") {
    super("PERMISSION_DENIED", message);
    this.name = "PermissionDeniedError";
  }
}

export class FailedPreconditionError extends QimError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super("FAILED_PRECONDITION", message, details);
    this.name = "FailedPreconditionError";
  }
}

/** A caller's compare-and-set (`expectVersion`) did not match the group's member version. */
export class VersionConflictError extends QimError {
  /** `expected` may be a bigint past 2^53−1 (a uint64 expect_version): its details carry it as decimal text. */
  constructor(expected: number | bigint, actual: number) {
    super("VERSION_CONFLICT", `member version is ${actual}, expected ${expected}`, { expected: typeof expected === "bigint" ? expected.toString() : expected, actual });
    this.name = "VersionConflictError";
  }
}

/** The member version moved under the writer on every bounded retry (DESIGN §2 step 3). */
export class MembershipChangedError extends QimError {
  constructor(attempts: number) {
    super("MEMBERSHIP_CHANGED", `membership changed during each of ${attempts} attempts; nothing was committed`, { attempts });
    this.name = "MembershipChangedError";
  }
}

/** A client_message_id already names a committed message whose content differs (issue 24). */
export class IdempotencyConflictError extends QimError {
  constructor(clientMessageId: string, conversationSeq: number) {
    super(
      "IDEMPOTENCY_CONFLICT",
      `client message id ${clientMessageId} was already used for a different message${conversationSeq > 0 ? ` (seq ${conversationSeq})` : ""}; a retry must resend the same message, a new message needs a new id`,
      { clientMessageId, conversationSeq },
    );
    this.name = "IdempotencyConflictError";
  }
}

export class UnavailableError extends QimError {
  constructor(message: string) {
    super("UNAVAILABLE", message);
    this.name = "UnavailableError";
  }
}

export class InternalError extends QimError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super("INTERNAL", message, details);
    this.name = "InternalError";
  }
}
