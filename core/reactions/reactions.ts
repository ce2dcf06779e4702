import {
  FailedPreconditionError, hexToUuid, HISTORY_PAGE_LIMIT, InvalidArgumentError, NotFoundError, PermissionDeniedError, REACTION_DETAIL_MAX_MEMBERS, REACTION_DETAIL_MAX_PER_MESSAGE,
  REACTION_KEY_MAX_BYTES, REACTION_MAX_KEYS_PER_MESSAGE, uuidToHex, type KeySpace, type Uuid,
} from "../base/index.js";
import { conversationKeys, groupDissolvedError, reactionWhoKey } from "../conversation/index.js";
import type { ReactionEvent } from "../delivery/index.js";
import type { RedisStore } from "../store/index.js";
import { reactionMetrics as metrics } from "./metrics.js";
import { reactScript } from "./scripts.js";

/** A message's reactions (spec 003 §4): absolute counts at summary_version, which only grows. */
export interface ReactionSummary {
  conversationSeq: number;
  version: number;
  /** Every key with a count above 0, in the order the keys first appeared. */
  counts: { key: string; count: number }[];
  /** Reactions kept with a detail row (who, when). */
  detailRows: number;
  /** Reactions counted with no detail row (past the detail limits): who made them is not listed. */
  withoutDetail: number;
}

/** One reaction as the who hash keeps it: reactedAt null when only its idempotency mark is kept. */
export interface ReactionRow {
  user: Uuid;
  key: string;
  reactedAt: number | null;
}

export interface ReactRequest {
  tenant: Uuid;
  group: Uuid;
  seq: number;
  user: Uuid;
  key: string;
  /** true: remove the user's reaction_key; false: add it. */
  remove?: boolean;
}

export interface ReactResult {
  tenant: Uuid;
  group: Uuid;
  summary: ReactionSummary;
  /** false: the user had that reaction already (an add) or did not (a remove): nothing changed. */
  changed: boolean;
}

/** A changed summary as delivery pushes it. */
export type ReactionChange = Omit<ReactionEvent, "encoded">;

export interface ReactionsOptions {
  now?: () => number;
  /** A summary changed: its new counts go to the members online now (the runtime wires core/delivery). Not awaited. */
  onChange?: (tenant: Uuid, change: ReactionChange) => void;
  /** reaction_detail_max_members, reaction_detail_max_per_message, REACTION_MAX_KEYS_PER_MESSAGE. */
  detailMaxMembers?: number;
  detailMaxPerMessage?: number;
  maxKeysPerMessage?: number;
}

/** Who a page of the who hash lists at most. */
export const REACTION_WHO_PAGE_LIMIT = 1000;
/** Messages whose reactions one trim step removes at most. */
export const REACTION_TRIM_BATCH = 256;

// printable, no spaces or controls (a tab or newline could never split a summary entry), no C1
// controls, no bidi overrides or isolates (a key shown beside a name must not reorder it); the
// joiners and variation selectors of emoji sequences stay allowed
const BAD_KEY_CHARS = /[\x00-\x20\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/** A reaction_key (spec 003 §4.3: a short enum string, not encrypted): 1–REACTION_KEY_MAX_BYTES bytes of UTF-8, no spaces or control characters. */
export function parseReactionKey(key: unknown, field = "reaction_key"): string {
  if (typeof key !== "string" || key === "") throw new InvalidArgumentError(field, `${field} is required: an emoji or a short name`);
  const bytes = Buffer.byteLength(key, "utf8");
  if (bytes > REACTION_KEY_MAX_BYTES) throw new InvalidArgumentError(field, `${field} is at most ${REACTION_KEY_MAX_BYTES} bytes of UTF-8 (got ${bytes})`);
  if (BAD_KEY_CHARS.test(key)) throw new InvalidArgumentError(field, `${field} holds no spaces, control characters or direction marks`);
  // a lone surrogate does not survive UTF-8: the key stored would not be the key sent
  if (Buffer.from(key, "utf8").toString("utf8") !== key) throw new InvalidArgumentError(field, `${field} is not valid UTF-8`);
  return key;
}

/** A member of `rxsum` (lua/reactions/react-5.lua): seq, version, detail rows, marks alone, then key/count pairs. */
export function decodeSummaryEntry(member: string): ReactionSummary {
  const p = member.split("\t");
  const counts: { key: string; count: number }[] = [];
  for (let i = 4; i + 1 < p.length; i += 2) counts.push({ key: p[i]!, count: Number(p[i + 1]) });
  return { conversationSeq: Number(p[0]), version: Number(p[1]), detailRows: Number(p[2]), withoutDetail: Number(p[3]), counts };
}

/**
 * Reactions (spec 003 §4, issue 28): the executor of REACT. One atomic step on the conversation's
 * bucket (lua/reactions/react-5.lua) checks who may react, keeps the idempotency mark (and within
 * the detail limits the detail row) and the message's summary with summary_version + 1; then the
 * new summary goes to the members online now (onChange: core/delivery, merged per message over
 * reaction_push_merge_window). Never a mailbox entry, unread, order change or push: no key of the
 * list, the projection or the outbox is written. Offline members read the summaries with the
 * messages (summaries()). A recall deletes them (applyAnchorEvent), a history trim too (trimBelow).
 */
export class Reactions {
  private readonly now: () => number;

  constructor(private readonly store: RedisStore, private readonly keys: KeySpace, private readonly opts: ReactionsOptions = {}) {
    this.now = opts.now ?? Date.now;
  }

  /** Adds or removes a user's reaction; idempotent on (tenant, group, seq, user, key). */
  async react(req: ReactRequest): Promise<ReactResult> {
    const key = parseReactionKey(req.key);
    if (!Number.isSafeInteger(req.seq) || req.seq < 1) throw new InvalidArgumentError("conversation_seq", "conversation_seq must be ≥ 1");
    const action = req.remove === true ? "remove" : "add";
    const k = conversationKeys(this.keys, req.tenant, req.group);
    const r = await reactScript.run(this.store.clientFor(k.tag), { ...k, rxwho: reactionWhoKey(this.keys, req.tenant, req.group, req.seq) }, {
      userHex: uuidToHex(req.user), seq: req.seq, key, add: action === "add", nowMs: this.now(),
      maxMembers: this.opts.detailMaxMembers ?? REACTION_DETAIL_MAX_MEMBERS,
      maxDetails: this.opts.detailMaxPerMessage ?? REACTION_DETAIL_MAX_PER_MESSAGE,
      maxKeys: this.opts.maxKeysPerMessage ?? REACTION_MAX_KEYS_PER_MESSAGE,
    });
    if (r.status !== "OK" && r.status !== "DUPLICATE") {
      metrics.reactions.inc({ action, result: "refused" });
      switch (r.status) {
        // ADR-0021 §3: a user cannot tell a missing group from one they are not in
        case "GROUP_NOT_FOUND": case "SENDER_NOT_MEMBER": throw new PermissionDeniedError();
        case "GROUP_DISSOLVED": throw groupDissolvedError(req.group, r.dissolvedAt);
        case "NO_SUCH_MESSAGE": throw new NotFoundError("message", `${req.seq} of group ${req.group} (absent, trimmed by retention, not visible to the user, or an event)`);
        case "MESSAGE_RECALLED": throw new FailedPreconditionError(`message ${req.seq} of group ${req.group} is recalled: it takes no reactions`);
        case "REACTION_KEYS_FULL": throw new FailedPreconditionError(`message ${req.seq} of group ${req.group} has ${r.max} distinct reaction keys already (REACTION_MAX_KEYS_PER_MESSAGE); add one of those`);
      }
    }
    const changed = r.status === "OK";
    metrics.reactions.inc({ action, result: changed ? "changed" : "unchanged" });
    const s = r.summary;
    const summary: ReactionSummary = { conversationSeq: req.seq, version: s.version, counts: s.counts, detailRows: s.detailRows, withoutDetail: s.markerOnly };
    if (changed) {
      if (s.marked) metrics.detailSkipped.inc();
      this.opts.onChange?.(req.tenant, { kind: "reaction", conversation: req.group, conversationSeq: req.seq, version: summary.version, counts: summary.counts });
    }
    return { tenant: req.tenant, group: req.group, summary, changed };
  }

  /**
   * The summaries of these messages (one range read of `rxsum` between the lowest and the highest
   * seq, at most HISTORY_PAGE_LIMIT entries: a history page's), by seq; a message nobody reacted to
   * is absent. Not checked against the reader's visibility: pass the seqs of a history read.
   */
  async summaries(tenant: Uuid, group: Uuid, seqs: readonly number[]): Promise<Map<number, ReactionSummary>> {
    const out = new Map<number, ReactionSummary>();
    if (seqs.length === 0) return out;
    const want = new Set(seqs);
    const k = conversationKeys(this.keys, tenant, group);
    const members = await this.store.clientFor(k.tag).zrangebyscore(k.rxsum, Math.min(...seqs), Math.max(...seqs), "LIMIT", 0, HISTORY_PAGE_LIMIT);
    for (const m of members) {
      const s = decodeSummaryEntry(m);
      if (want.has(s.conversationSeq)) out.set(s.conversationSeq, s);
    }
    return out;
  }

  /** One message's summary; null when nobody reacted to it (or it is recalled, or trimmed). */
  async summary(tenant: Uuid, group: Uuid, seq: number): Promise<ReactionSummary | null> {
    return (await this.summaries(tenant, group, [seq])).get(seq) ?? null;
  }

  /**
   * Who reacted to a message, one HSCAN page (at most `limit`, ≤ REACTION_WHO_PAGE_LIMIT; HSCAN may
   * give a few more or repeat one across pages). reactedAt is null for a reaction kept without its
   * detail row. nextCursor "" at the end.
   */
  async who(tenant: Uuid, group: Uuid, seq: number, page: { cursor?: string; limit?: number } = {}): Promise<{ rows: ReactionRow[]; nextCursor: string }> {
    if (page.limit !== undefined && (!Number.isInteger(page.limit) || page.limit < 1 || page.limit > REACTION_WHO_PAGE_LIMIT)) {
      throw new InvalidArgumentError("limit", `1 to ${REACTION_WHO_PAGE_LIMIT} reactions a page`);
    }
    const limit = page.limit ?? 100;
    const cursor = page.cursor === undefined || page.cursor === "" ? "0" : page.cursor;
    if (!/^\d{1,20}$/.test(cursor)) throw new InvalidArgumentError("cursor", "cursor is the nextCursor of the previous page");
    const k = conversationKeys(this.keys, tenant, group);
    const [next, fields] = await this.store.clientFor(k.tag).hscan(reactionWhoKey(this.keys, tenant, group, seq), cursor, "COUNT", limit);
    const rows: ReactionRow[] = [];
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const f = fields[i]!;
      const tab = f.indexOf("\t");
      rows.push({ user: hexToUuid(f.slice(0, tab)), key: f.slice(tab + 1), reactedAt: fields[i + 1] === "" ? null : Number(fields[i + 1]) });
    }
    return { rows, nextCursor: next === "0" ? "" : next };
  }

  /**
   * The reactions of messages below `floor` (the conversation's history trim moved its earliest
   * seq there: those messages are gone), at most REACTION_TRIM_BATCH messages a call, in one MULTI
   * on the conversation's tag: their summaries and (UNLINK) their who hashes. Returns how many
   * messages' reactions went; REACTION_TRIM_BATCH says call again.
   */
  async trimBelow(tenant: Uuid, group: Uuid, floor: number): Promise<number> {
    const k = conversationKeys(this.keys, tenant, group);
    const client = this.store.clientFor(k.tag);
    const members = await client.zrangebyscore(k.rxsum, "-inf", `(${floor}`, "LIMIT", 0, REACTION_TRIM_BATCH);
    if (members.length === 0) return 0;
    const seqs = members.map((m) => decodeSummaryEntry(m).conversationSeq);
    const m = client.multi();
    m.zrem(k.rxsum, ...members);
    m.unlink(...seqs.map((s) => reactionWhoKey(this.keys, tenant, group, s)));
    await m.exec();
    metrics.trimmed.inc(seqs.length);
    return seqs.length;
  }
}
