import { luaStatus, defineScript, defineVariadicScript, LUA_STATUS } from "../lua/index.js";
import type { UserKeys } from "./keys.js";

/**
 * The session projection's scripts (lua/projection/), each declared once: KEYS by name in the
 * order of the script's header, ARGV from named fields, the reply decoded.
 */

/** One conversation entering one user's projection, with its pending registration. */
export interface ProjectedEntry {
  keys: Pick<UserKeys, "convs" | "ucsPending">;
  conversationHex: string;
  createdAt: number;
  /** The pending registration item (authority.ts encodeRegistration). */
  pendingItem: string;
}

/** Returns how many entries were registered (appended to a pending queue). */
export const projectEntriesScript = defineVariadicScript({
  name: "projectEntries",
  itemKeys: (e: ProjectedEntry) => [e.keys.convs, e.keys.ucsPending],
  itemArgs: (e: ProjectedEntry) => [e.conversationHex, String(e.createdAt), e.pendingItem],
  reply: (r) => Number(r[0]),
});

/** Pops the queue heads equal to the items written to the authority; null when the slot's lease fenced the call out. */
export const popRegisteredScript = defineScript({
  name: "popRegistered",
  keys: ["pending", "lease"],
  args: (a: { owner: string; token: number; items: readonly string[] }) => [a.owner, a.token, ...a.items],
  reply: (r) => (Number(r[0]) === LUA_STATUS.FENCED ? null : Number(r[0])),
});

/** Moves an undecodable head of a pending queue to its dead letters; true when it moved. */
export const deadLetterRegistrationScript = defineScript({
  name: "deadLetterRegistration",
  keys: ["pending", "dead"],
  args: (a: { item: string; keep: number }) => [a.item, a.keep],
  reply: (r) => Number(r[0]) === 1,
});

/**
 * Compare-and-set of a partition's checkpoint, fenced by the partition's lease; `moved` false when
 * another consumer moved it first or (`fenced`) the lease names another owner or a newer token.
 */
export const advanceCheckpointScript = defineScript({
  name: "advanceCheckpoint",
  keys: ["checkpoint", "lease"],
  args: (a: { expected: string | null; to: string; clusterId: string; topicId: string; partitionCount: number; updatedAt: number; owner: string; token: number }) =>
    [a.expected ?? "", a.to, a.clusterId, a.topicId, a.partitionCount, a.updatedAt, a.owner, a.token],
  reply: (r) => ({ moved: luaStatus(r) === "OK", fenced: luaStatus(r) === "FENCED", position: String(r[1] ?? "") }),
});

/** Returns the new epoch. */
export const bumpEpochScript = defineScript({
  name: "bumpEpoch",
  keys: ["epoch", "epochLog"],
  args: (a: { reason: string; by: string; at: number; keep: number }) => [a.reason, a.by, a.at, a.keep],
  reply: (r) => Number(r[0]),
});

/** Raises a user's epoch mark, never lowers it; returns the mark after the call. */
export const raiseEpochMarkScript = defineScript({
  name: "raiseEpochMark",
  keys: ["epochMarks"] satisfies (keyof UserKeys)[],
  args: (a: { ref: string; epoch: number }) => [a.ref, a.epoch],
  reply: (r) => Number(r[0]),
});

/** Releases a lock held with `token`; false when it was not ours (or gone). */
export const releaseLockScript = defineScript({
  name: "releaseLock",
  keys: ["lock"],
  args: (a: { token: string }) => [a.token],
  reply: (r) => Number(r[0]) === 1,
});
