/**
 * Command channel ids (spec 001): `<source>____cmd`. Every channel operation is keyed by the id
 * AND the type; these helpers only shape and check the id and the type.
 */
import { InvalidArgumentError } from "../base/index.js";
import { CMD_CHANNEL_SUFFIX } from "./types.js";

/** The longest command channel id, in bytes, the suffix included. */
export const CMD_CHANNEL_ID_MAX_BYTES = 128;
/** Channel types are one byte (WuKongIM uint8); 0 is never a channel type. */
export const CMD_CHANNEL_TYPE_MIN = 1;
export const CMD_CHANNEL_TYPE_MAX = 255;

/** Printable ASCII without space and without '|' (the separator of the durable keys). */
const ID_RE = /^[\x21-\x7b\x7d\x7e]+$/;

/** Adds CMD_CHANNEL_SUFFIX once: `g1` → `g1____cmd`, `g1____cmd` stays. */
export function normaliseCommandChannel(id: string): string {
  return id.endsWith(CMD_CHANNEL_SUFFIX) ? id : id + CMD_CHANNEL_SUFFIX;
}

/** Strips exactly one suffix: `nested____cmd____cmd` → `nested____cmd`; an id without one stays. */
export function stripCommandSuffix(id: string): string {
  return id.endsWith(CMD_CHANNEL_SUFFIX) ? id.slice(0, id.length - CMD_CHANNEL_SUFFIX.length) : id;
}

/** A command channel id: a non-empty source followed by the suffix. */
export function isCommandChannel(id: string): boolean {
  return id.length > CMD_CHANNEL_SUFFIX.length && id.endsWith(CMD_CHANNEL_SUFFIX);
}

/** A channel type 1 … 255 (a number or a decimal string); InvalidArgumentError otherwise. */
export function parseChannelType(n: unknown, field: string): number {
  const v = typeof n === "string" && /^\d+$/.test(n.trim()) ? Number(n.trim()) : n;
  if (typeof v !== "number" || !Number.isInteger(v) || v < CMD_CHANNEL_TYPE_MIN || v > CMD_CHANNEL_TYPE_MAX) {
    throw new InvalidArgumentError(field, `${field} must be a channel type ${CMD_CHANNEL_TYPE_MIN}…${CMD_CHANNEL_TYPE_MAX}, got ${JSON.stringify(n)?.slice(0, 64)}`);
  }
  return v;
}

/**
 * A command channel id from input, validated and normalised (suffix added once): printable
 * ASCII without space or '|', a non-empty source, at most CMD_CHANNEL_ID_MAX_BYTES bytes with the
 * suffix.
 */
export function parseCommandChannelId(text: unknown, field: string): string {
  if (typeof text !== "string" || text.length === 0) throw new InvalidArgumentError(field, `${field} must be a non-empty channel id`);
  if (!ID_RE.test(text)) throw new InvalidArgumentError(field, `${field} must be printable ASCII without spaces or '|', got ${JSON.stringify(text.slice(0, 64))}${text.length > 64 ? ` (${text.length} characters)` : ""}`);
  const id = normaliseCommandChannel(text);
  if (!isCommandChannel(id)) throw new InvalidArgumentError(field, `${field} needs a source before ${CMD_CHANNEL_SUFFIX}`);
  if (id.length > CMD_CHANNEL_ID_MAX_BYTES) {
    throw new InvalidArgumentError(field, `${field} is ${id.length} bytes with ${CMD_CHANNEL_SUFFIX}; at most ${CMD_CHANNEL_ID_MAX_BYTES}`);
  }
  return id;
}

/** True for an id parseCommandChannelId would accept unchanged (used by the intent validation). */
export function isValidCommandChannelId(id: string): boolean {
  return ID_RE.test(id) && isCommandChannel(id) && id.length <= CMD_CHANNEL_ID_MAX_BYTES;
}

/** The stable text of a channel key: `type|id` (ids hold no '|'). */
export function channelKeyText(channel: { channelId: string; channelType: number }): string {
  return `${channel.channelType}|${channel.channelId}`;
}
