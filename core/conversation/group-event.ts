import { bytesToUuid, FailedPreconditionError, uuidToBytes, type Uuid } from "../base/index.js";

/**
 * `custom_type` of a group lifecycle CONTROL message (issue 24). Spec 000's `qim.membership.v1`
 * payload knows join, leave and remove, each naming users; a dissolve names none and changes no
 * member, so it gets its own type rather than a fourth op a client of the membership payload would
 * not know.
 */
export const GROUP_EVENT_CUSTOM_TYPE = "qim.group.v1";

export const GroupEventOp = { DISSOLVE: 1 } as const;
export type GroupEventOpCode = (typeof GroupEventOp)[keyof typeof GroupEventOp];

/** The op's name on the wire and in qimctl's output. */
export function groupEventOpName(op: GroupEventOpCode): "dissolve" {
  if (op === GroupEventOp.DISSOLVE) return "dissolve";
  throw new Error(`unknown group event op ${String(op)}`);
}

export interface GroupEventBody {
  op: GroupEventOpCode;
  /** ZERO_UUID (ADMIN_ACTOR): a dissolve is an admin action; the recorded sender is the owner. */
  actor: Uuid;
}

/** The fixed size of the body: op:u8 | actor:u128be. */
export const GROUP_EVENT_PAYLOAD_BYTES = 17;

/** Body: op:u8 | actor:u128be (fixed binary, the membership payload's style: ADR-0021 §2). */
export function encodeGroupEventPayload(body: GroupEventBody): Uint8Array {
  const out = new Uint8Array(GROUP_EVENT_PAYLOAD_BYTES);
  out[0] = body.op;
  out.set(uuidToBytes(body.actor), 1);
  return out;
}

export function decodeGroupEventPayload(bytes: Uint8Array): GroupEventBody {
  if (bytes.length !== GROUP_EVENT_PAYLOAD_BYTES) throw new Error(`group event payload is ${bytes.length} bytes, not ${GROUP_EVENT_PAYLOAD_BYTES}`);
  if (bytes[0] !== GroupEventOp.DISSOLVE) throw new Error(`unknown group event op ${bytes[0]}`);
  return { op: bytes[0], actor: bytesToUuid(bytes.subarray(1, 17)) };
}

/**
 * The refusal of anything sent to a dissolved group — a message, a membership change, a transfer,
 * a CMD to its members (exit 4 in qimctl): nothing is committed after the dissolve event at J.
 */
export function groupDissolvedError(group: Uuid, dissolvedAt: number): FailedPreconditionError {
  return new FailedPreconditionError(`group ${group} was dissolved at conversation_seq ${dissolvedAt}`, { reason: "GROUP_DISSOLVED", dissolvedAt });
}
