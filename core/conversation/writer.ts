import { hexToUuid, IdempotencyConflictError, InternalError, MembershipChangedError, PermissionDeniedError, type Uuid, type UuidHex } from "../base/index.js";
import type { RedisStore } from "../store/index.js";
import { groupDissolvedError } from "./group-event.js";
import type { ConversationKeys } from "./keys.js";
import { metrics } from "./metrics.js";
import { commitMessagesScript } from "./scripts.js";

/** One message handed to the writer, already validated and encoded. */
export interface WriteRequest {
  clientMessageId: UuidHex;
  sender: UuidHex;
  /** The history entry without its seq (see history.ts). */
  rest: string;
}

export interface WriteOutcome {
  conversationSeq: number;
  messageId: Uuid | null;
  /** The member version the audience was frozen at (a duplicate's: the original's); null for a duplicate of an entry written before issue 24, which holds no version. */
  version: number | null;
  duplicate: boolean;
  attempts: number;
}

interface Pending extends WriteRequest {
  attempts: number;
  resolve: (o: WriteOutcome) => void;
  reject: (e: unknown) => void;
}

interface Queue {
  keys: ConversationKeys;
  items: Pending[];
  busy: boolean;
}

export interface WriterOptions {
  /** Re-freezes after "membership changed" before a message fails (DESIGN §2: 3). */
  maxRetries: number;
  /** The most messages one commit call carries. */
  maxBatch: number;
  /** Called after a call committed at least one message into the bucket's outbox. */
  onCommit?: (bucket: number) => void;
}

/**
 * The writer's commit path with group commit: at most one commit call per conversation is in
 * flight; messages that arrive meanwhile queue and go together in the next call, frozen at one
 * member version V and checked against it inside the script (commitMessages). A lone message
 * goes at once, so batching adds no latency; under load one call's fixed cost (the round trip,
 * the script invocation) is shared by the batch.
 *
 * V is the version this writer last committed at for the group (read from grpmeta the first
 * time). When it is stale the script refuses the batch without consuming a seq and answers with
 * the current version; the writer re-freezes at it and retries, at most maxRetries times per
 * message, counting qim_writer_membership_retry_total{path="send"}.
 */
export class GroupCommitWriter {
  private readonly queues = new Map<string, Queue>();
  private readonly versions = new Map<string, string>();

  constructor(private readonly store: RedisStore, private readonly opts: WriterOptions) {}

  submit(keys: ConversationKeys, req: WriteRequest): Promise<WriteOutcome> {
    return new Promise((resolve, reject) => {
      let q = this.queues.get(keys.outboxRef);
      if (!q) {
        q = { keys, items: [], busy: false };
        this.queues.set(keys.outboxRef, q);
      }
      q.items.push({ clientMessageId: req.clientMessageId, sender: req.sender, rest: req.rest, attempts: 0, resolve, reject });
      if (!q.busy) void this.drain(q);
    });
  }

  private async drain(q: Queue): Promise<void> {
    q.busy = true;
    try {
      while (q.items.length > 0) {
        const batch = q.items.splice(0, this.opts.maxBatch);
        try {
          const retry = await this.commit(q.keys, batch);
          if (retry.length > 0) q.items.unshift(...retry);
        } catch (err) {
          for (const p of batch) p.reject(err);
        }
      }
    } finally {
      q.busy = false;
      if (q.items.length === 0) this.queues.delete(q.keys.outboxRef);
    }
  }

  /** One commit call; returns the messages to re-freeze and send again. */
  private async commit(k: ConversationKeys, batch: Pending[]): Promise<Pending[]> {
    const client = this.store.clientFor(k.tag);
    let version = this.versions.get(k.outboxRef) ?? null;
    if (version === null) {
      version = await client.hget(k.grpmeta, "version");
      if (version === null) {
        for (const p of batch) p.reject(new PermissionDeniedError());
        return [];
      }
    }
    metrics.commitBatchSize.observe(batch.length);
    const outcomes = await this.store.commit(commitMessagesScript, client, k, { version, outboxRef: k.outboxRef, messages: batch });
    if (outcomes.length !== batch.length) throw new InternalError(`commitMessages answered ${outcomes.length} outcomes for ${batch.length} messages`);

    // a duplicate answers its original's version, kept in the idempotency entry: immutable once
    // written, so reading it after the script sees what the script saw
    const dupIds = batch.filter((_, i) => outcomes[i]!.status === "DUPLICATE").map((p) => p.clientMessageId);
    const dupVersions = new Map<string, number | null>();
    if (dupIds.length > 0) {
      const entries = await client.hmget(k.idem, ...dupIds);
      dupIds.forEach((id, i) => {
        const m = /^\d+\|(\d+)\|[0-9a-f]+$/.exec(entries[i] ?? "");
        dupVersions.set(id, m ? Number(m[1]) : null);
      });
    }

    const retry: Pending[] = [];
    let current: string | undefined;
    let committed = false;
    batch.forEach((p, i) => {
      const o = outcomes[i]!;
      p.attempts++;
      switch (o.status) {
        case "OK":
          committed = true;
          metrics.messagesCommitted.inc();
          p.resolve({ conversationSeq: o.conversationSeq, messageId: hexToUuid(o.messageId), version: Number(version), duplicate: false, attempts: p.attempts });
          return;
        case "DUPLICATE":
          p.resolve({ conversationSeq: o.conversationSeq, messageId: o.messageId === "" ? null : hexToUuid(o.messageId), version: dupVersions.get(p.clientMessageId) ?? null, duplicate: true, attempts: p.attempts });
          return;
        case "MEMBERSHIP_CHANGED":
          current = o.currentVersion;
          if (p.attempts > this.opts.maxRetries) {
            p.reject(new MembershipChangedError(p.attempts));
          } else {
            metrics.membershipRetries.inc({ path: "send" });
            retry.push(p);
          }
          return;
        case "IDEMPOTENCY_CONFLICT":
          p.reject(new IdempotencyConflictError(hexToUuid(p.clientMessageId), o.conversationSeq));
          return;
        case "GROUP_DISSOLVED":
          p.reject(groupDissolvedError(hexToUuid(k.outboxRef.slice(k.outboxRef.indexOf("|") + 1)), o.dissolvedAt));
          return;
        case "SENDER_NOT_MEMBER":
        case "GROUP_NOT_FOUND":
          p.reject(new PermissionDeniedError());
          return;
        case "UNEXPECTED":
          p.reject(new InternalError(`commitMessages: unknown status ${o.code}`));
      }
    });
    if (committed) this.opts.onCommit?.(k.bucket);
    if (current !== undefined) this.rememberVersion(k.outboxRef, current);
    else this.rememberVersion(k.outboxRef, version);
    return retry;
  }

  private rememberVersion(ref: string, version: string): void {
    if (this.versions.size >= 100_000 && !this.versions.has(ref)) this.versions.clear();
    this.versions.set(ref, version);
  }
}
