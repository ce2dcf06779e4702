import { blake3 } from "@noble/hashes/blake3.js";
import { bytesToUuid, uuidToBytes, ZERO_UUID, type Uuid } from "../base/index.js";

/** `custom_type` of the membership CONTROL message (ADR-0021 §2). */
export const MEMBERSHIP_CUSTOM_TYPE = "qim.membership.v1";

export const MembershipOp = { JOIN: 1, LEAVE: 2, REMOVE: 3 } as const;
export type MembershipOpCode = (typeof MembershipOp)[keyof typeof MembershipOp];
export type MembershipOpName = "join" | "leave" | "remove";

export function opCode(name: MembershipOpName): MembershipOpCode {
  return name === "join" ? MembershipOp.JOIN : name === "leave" ? MembershipOp.LEAVE : MembershipOp.REMOVE;
}

export function opName(code: number): MembershipOpName {
  if (code === MembershipOp.JOIN) return "join";
  if (code === MembershipOp.LEAVE) return "leave";
  if (code === MembershipOp.REMOVE) return "remove";
  throw new Error(`unknown membership op ${code}`);
}

export interface MembershipEventBody {
  op: MembershipOpCode;
  /** ZERO_UUID for an admin change; the leaver for a leave. */
  actor: Uuid;
  users: Uuid[];
}

/** The most users one payload can name (n is a u16). */
export const MAX_PAYLOAD_USERS = 0xffff;

/** Body: op:u8 | actor:u128be | n:u16be | n × user:u128be (ADR-0021 §2). */
export function encodeMembershipPayload(body: MembershipEventBody): Uint8Array {
  if (body.users.length > MAX_PAYLOAD_USERS) throw new Error(`a membership event names at most ${MAX_PAYLOAD_USERS} users`);
  const out = new Uint8Array(1 + 16 + 2 + 16 * body.users.length);
  out[0] = body.op;
  out.set(uuidToBytes(body.actor), 1);
  out[17] = (body.users.length >> 8) & 0xff;
  out[18] = body.users.length & 0xff;
  body.users.forEach((u, i) => out.set(uuidToBytes(u), 19 + 16 * i));
  return out;
}

export function decodeMembershipPayload(bytes: Uint8Array): MembershipEventBody {
  if (bytes.length < 19) throw new Error(`membership payload too short: ${bytes.length} bytes`);
  const op = bytes[0]!;
  opName(op);
  const n = (bytes[17]! << 8) | bytes[18]!;
  if (bytes.length !== 19 + 16 * n) throw new Error(`membership payload of ${bytes.length} bytes does not hold ${n} users`);
  const users: Uuid[] = [];
  for (let i = 0; i < n; i++) users.push(bytesToUuid(bytes.subarray(19 + 16 * i, 35 + 16 * i)));
  return { op: op as MembershipOpCode, actor: bytesToUuid(bytes.subarray(1, 17)), users };
}

const IDEMPOTENCY_DOMAIN = new TextEncoder().encode("qim.membership-event.v1\0");

/**
 * client_message_id of a membership event (ADR-0021 §2):
 * blake3("qim.membership-event.v1\0" ‖ tenant ‖ group ‖ op:u8 ‖ actor ‖ V:u64be ‖ targets)[0..16],
 * targets sorted ascending, 16 bytes each. The same change planned at the same version always
 * has the same id, so a retry finds the existing commit.
 */
export function membershipIdempotencyId(input: {
  tenant: Uuid;
  group: Uuid;
  op: MembershipOpCode;
  actor: Uuid;
  version: number;
  targets: Uuid[];
}): Uint8Array {
  const targets = [...input.targets].sort();
  const buf = new Uint8Array(IDEMPOTENCY_DOMAIN.length + 16 + 16 + 1 + 16 + 8 + 16 * targets.length);
  let o = 0;
  buf.set(IDEMPOTENCY_DOMAIN, o); o += IDEMPOTENCY_DOMAIN.length;
  buf.set(uuidToBytes(input.tenant), o); o += 16;
  buf.set(uuidToBytes(input.group), o); o += 16;
  buf[o++] = input.op;
  buf.set(uuidToBytes(input.actor), o); o += 16;
  new DataView(buf.buffer).setBigUint64(o, BigInt(input.version)); o += 8;
  for (const t of targets) { buf.set(uuidToBytes(t), o); o += 16; }
  return blake3(buf).subarray(0, 16);
}

export const ADMIN_ACTOR = ZERO_UUID;
