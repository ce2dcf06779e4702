/**
 * The pending buffer's file (spec 001): `<dataDir>/conversationv2/cmd_conversation_updates.json`,
 * written on stop (and after the first successful flush that follows a restore) to `.tmp`, synced,
 * closed and renamed over the file, so a half-written file never replaces the last whole one.
 * Its form is WuKongIM's PendingConversationUpdate list with the tenant added and the per-user
 * last seq and active time the notes describe.
 */
import { mkdir, open, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { InvalidArgumentError, type Uuid } from "../base/index.js";
import { isValidCommandChannelId } from "../cmd-log/index.js";

export const CMD_PENDING_DIR = "conversationv2";
export const CMD_PENDING_FILE = "cmd_conversation_updates.json";

export interface PendingFileUpdate {
  tenant: Uuid;
  command_channel_id: string;
  channel_type: number;
  last_msg_seq: number;
  active_at: number;
  user_read_seqs: Record<string, number>;
  user_last_msg_seqs: Record<string, number>;
  user_active_ats: Record<string, number>;
}

export function pendingFilePath(dataDir: string): string {
  return join(dataDir, CMD_PENDING_DIR, CMD_PENDING_FILE);
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const count = (v: unknown) => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;

/** The updates of a file's text; InvalidArgumentError on anything that is not a valid list. */
export function decodePendingFile(text: string): PendingFileUpdate[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new InvalidArgumentError("file", `not JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(raw)) throw new InvalidArgumentError("file", "not a list of pending updates");
  raw.forEach((u: Record<string, unknown>, i) => {
    const bad = (why: string) => new InvalidArgumentError("file", `update ${i}: ${why}`);
    if (typeof u !== "object" || u === null) throw bad("not an object");
    if (typeof u.tenant !== "string" || !UUID_RE.test(u.tenant)) throw bad("tenant is not a UUID");
    if (typeof u.command_channel_id !== "string" || !isValidCommandChannelId(u.command_channel_id)) throw bad("not a command channel id");
    if (!Number.isInteger(u.channel_type) || (u.channel_type as number) < 1 || (u.channel_type as number) > 255) throw bad("bad channel type");
    if (!count(u.last_msg_seq) || (u.last_msg_seq as number) < 1 || !count(u.active_at)) throw bad("bad last seq or active time");
    for (const m of ["user_read_seqs", "user_last_msg_seqs", "user_active_ats"] as const) {
      if (typeof u[m] !== "object" || u[m] === null || Array.isArray(u[m])) throw bad(`${m} is not a map`);
    }
    const reads = u.user_read_seqs as Record<string, unknown>;
    if (Object.keys(reads).length === 0) throw bad("no user");
    for (const [user, read] of Object.entries(reads)) {
      if (!UUID_RE.test(user)) throw bad(`user ${JSON.stringify(String(user).slice(0, 64))} is not a UUID`);
      const last = (u.user_last_msg_seqs as Record<string, unknown>)[user] ?? u.last_msg_seq;
      const at = (u.user_active_ats as Record<string, unknown>)[user] ?? u.active_at;
      if (!count(read) || !count(last) || !count(at) || (last as number) < 1 || (read as number) > (last as number)) throw bad(`bad seqs of ${user}`);
    }
  });
  return raw as PendingFileUpdate[];
}

export function encodePendingFile(updates: readonly PendingFileUpdate[]): string {
  return JSON.stringify(updates, null, 0) + "\n";
}

export type LoadResult =
  | { kind: "none" }
  | { kind: "empty" }
  | { kind: "bad"; badFile: string; reason: string }
  | { kind: "loaded"; updates: PendingFileUpdate[] };

/**
 * Reads the file: none; empty (zero bytes or only blanks: removed); bad (undecodable: renamed
 * `<name>.bad`, replacing an older one); loaded (the file stays until a later flush or save).
 */
export async function loadPendingFile(dataDir: string): Promise<LoadResult> {
  const path = pendingFilePath(dataDir);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { kind: "none" };
    throw err;
  }
  if (text.trim() === "") {
    await rm(path, { force: true });
    return { kind: "empty" };
  }
  try {
    return { kind: "loaded", updates: decodePendingFile(text) };
  } catch (err) {
    const badFile = `${path}.bad`;
    await rename(path, badFile);
    return { kind: "bad", badFile, reason: (err as Error).message };
  }
}

/** Writes the updates (.tmp, sync, close, rename); no update: the file is removed. */
export async function savePendingFile(dataDir: string, updates: readonly PendingFileUpdate[]): Promise<"saved" | "removed"> {
  const path = pendingFilePath(dataDir);
  if (updates.length === 0) {
    await rm(path, { force: true });
    return "removed";
  }
  await mkdir(join(dataDir, CMD_PENDING_DIR), { recursive: true });
  const tmp = `${path}.tmp`;
  const fh = await open(tmp, "w");
  try {
    await fh.writeFile(encodePendingFile(updates), "utf8");
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, path);
  return "saved";
}
