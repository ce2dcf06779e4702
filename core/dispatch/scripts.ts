import { InternalError, splitHexIds, type Uuid } from "../base/index.js";
import type { ConversationKeys } from "../conversation/index.js";
import { defineScript, LUA_STATUS, luaStatus } from "../lua/index.js";
import type { FanoutKeys } from "./keys.js";

/**
 * The relay's scripts (lua/dispatch/): read RECORDED commits with their frozen audiences, mark them
 * COMMITTED (in the log, or handed to a fanout job), and expand a fanout job chunk by chunk.
 */

export interface LoadedCommit {
  conversationSeq: number;
  /**
   * "dispatch": append it now (entry, version, recipients); "fanout": hand it to a fanout job (its
   * audience may exceed the budget, or an earlier seq of the conversation is in a job); "gone": no
   * longer RECORDED (an earlier pass committed it).
   */
  action: "dispatch" | "fanout" | "gone";
  /**
   * A group message handed to a fanout job ("fanout" only): its entry is here, and the relay
   * appends one members record for it before the job starts (issue 27), so that devices online get
   * it without waiting for the job's chunks. False for a control message (explicit audience).
   */
  members: boolean;
  entry: string;
  version: number;
  recipients: Uuid[];
  /** The same recipients as the script answered them (concatenated 32-hex ids). */
  recipientsHex: string;
}

const ACTIONS = { D: "dispatch", F: "fanout", M: "fanout", "": "gone" } as const;

export const loadForDispatchScript = defineScript({
  name: "loadForDispatch",
  keys: ["commits", "hist", "grpmembers", "grpdeltas", "grpmeta", "vpending", "fanoutPending"] satisfies (keyof (ConversationKeys & FanoutKeys))[],
  args: (a: { budget: number; outboxRef: string; seqs: readonly string[] }) => [a.budget, a.outboxRef, ...a.seqs],
  reply: (r): LoadedCommit[] => {
    if (typeof r[0] === "number" && r[0] < 0) throw new InternalError(`loadForDispatch: ${luaStatus(r)} at version ${String(r[1])}`);
    const out: LoadedCommit[] = [];
    // "=": the audience of the "D" item before it, answered once and parsed once; its records share
    // the one recipients array (nobody changes a record's recipients)
    let lastHex = "";
    let lastRecipients: Uuid[] = [];
    for (let i = 0; i < r.length; i += 5) {
      const action = ACTIONS[String(r[i + 1]) as keyof typeof ACTIONS];
      if (!action) throw new InternalError(`loadForDispatch: unknown state ${String(r[i + 1])}`);
      const same = r[i + 4] === "=";
      const recipientsHex = same ? lastHex : String(r[i + 4]);
      const recipients = same ? lastRecipients : splitHexIds(recipientsHex);
      if (action === "dispatch") {
        lastHex = recipientsHex;
        lastRecipients = recipients;
      }
      out.push({ conversationSeq: Number(r[i]), action, members: r[i + 1] === "M", entry: String(r[i + 2]), version: Number(r[i + 3]), recipients, recipientsHex });
    }
    return out;
  },
});

export const markCommittedScript = defineScript({
  name: "markCommitted",
  keys: ["commits", "outbox", "vpending", "grpdeltas", "lease", "fanoutJobs", "fanoutState", "fanoutPending"] satisfies (keyof (ConversationKeys & FanoutKeys) | "lease")[],
  /** toJobs: "S", or "S|m" for a seq whose members record the relay appended (its job's chunks then push nothing). */
  args: (a: { owner: string; token: number; outboxRef: string; dispatched: readonly string[]; toJobs: readonly string[] }) =>
    [a.owner, a.token, a.outboxRef, a.dispatched.length, ...a.dispatched, ...a.toJobs],
  /** How many seqs were still RECORDED and how many fanout jobs were queued; null when the bucket's lease fenced the call out (nothing written). */
  reply: (r) => (Number(r[0]) === LUA_STATUS.FENCED ? null : { marked: Number(r[0]), queued: Number(r[1]) }),
});

/** One step of a fanout job: the next chunk of its audience. */
export interface FanoutStep {
  /** The cursor after this step; "0" when the audience is done. */
  nextCursor: string;
  recipients: Uuid[];
  /** The message's history entry ("" when history lost it). */
  entry: string;
  version: number;
  /** The cursor and chunk number this step started from. */
  cursor: string;
  chunk: number;
  /** The seq's members record carried its pushes to devices: the job's chunks are for the projections only. */
  pushed: boolean;
}

export const expandAudienceScript = defineScript({
  name: "expandAudience",
  keys: ["grpmembers", "hist", "fanoutState"] satisfies (keyof (ConversationKeys & FanoutKeys))[],
  args: (a: { job: string; count: number }) => [a.job, a.count],
  /** null when the job is gone. */
  reply: (r): FanoutStep | null => r.length === 0 ? null : {
    nextCursor: String(r[0]), recipients: splitHexIds(String(r[1])), entry: String(r[2]), version: Number(r[3]), cursor: String(r[4]), chunk: Number(r[5]),
    pushed: String(r[6]) === "1",
  },
});

export const saveFanoutProgressScript = defineScript({
  name: "saveFanoutProgress",
  keys: ["lease", "fanoutJobs", "fanoutState", "fanoutPending"] satisfies (keyof FanoutKeys | "lease")[],
  args: (a: { owner: string; token: number; job: string; cursor: string; chunk: number; nextCursor: string; nextChunk: number }) =>
    [a.owner, a.token, a.job, a.cursor, a.chunk, a.nextCursor, a.nextChunk],
  reply: (r): "saved" | "done" | "moved" | "fenced" => {
    const n = Number(r[0]);
    if (n === LUA_STATUS.FENCED) return "fenced";
    return n === 2 ? "done" : n === 1 ? "saved" : "moved";
  },
});

/** A batch of records appended to one partition's stream, in order; answers their ids (lua/dispatch/appendRecords-1.lua). */
export const appendRecordsScript = defineScript({
  name: "appendRecords",
  keys: ["stream"],
  /** Each record's fields (name, value alternating). */
  args: (a: { records: readonly (readonly string[])[] }) => a.records.flatMap((f) => [f.length, ...f]),
  /** `previous`: the stream's newest record before the batch ("" none); `ids`: the records' ids in order. */
  reply: (r): { previous: string; ids: string[] } => ({ previous: r.length > 0 ? String(r[0]) : "", ids: r.slice(1).map(String) }),
});

/** A partition's watermark numbers and records after a position (lua/dispatch/readLog-1.lua). */
export interface LogRead {
  exists: boolean;
  length: number;
  entriesAdded: number;
  lastId: string;
  /** The oldest retained record's id ("" none). */
  firstId: string;
  /** As XRANGE gives them; a record whose id was passed as known comes as that id alone. */
  records: ([string, string[]] | string)[];
}

export const readLogScript = defineScript({
  name: "readLog",
  keys: ["stream"],
  /** known: pairs id, conversation seq of records the caller holds (they come back as the bare id). */
  args: (a: { start: string; count: number; known?: readonly string[] }) => [a.start, a.count, ...(a.known ?? [])],
  reply: (r): LogRead => ({
    exists: Number(r[0]) === 1,
    length: Number(r[1]),
    entriesAdded: Number(r[2]),
    lastId: String(r[3]),
    firstId: String(r[4] ?? ""),
    records: (r[5] ?? []) as ([string, string[]] | string)[],
  }),
});
