import { InternalError, MembershipChangedError, PermissionDeniedError } from "./errors.js";
import { hexToUuid, type Uuid } from "./ids.js";
import type { ConversationKeys } from "./keys.js";
import { callScript } from "./lua.js";
import { metrics } from "./metrics.js";
import type { RedisStore } from "./store.js";

/** One message handed to the writer, already validated and encoded. */
export interface WriteRequest {
  clientMessageIdHex: string;
  senderHex: string;
  /** The history entry without its seq (see history.ts). */
  rest: string;
}

export interface WriteOutcome {
  conversationSeq: number;
  messageId: Uuid | null;
  /** The member version the audience was frozen at; null for a duplicate. */
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
      q.items.push({ clientMessageIdHex: req.clientMessageIdHex, senderHex: req.senderHex, rest: req.rest, attempts: 0, resolve, reject });
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
    const args: (string | number)[] = [version, k.outboxRef];
    for (const p of batch) args.push(p.clientMessageIdHex, p.senderHex, p.rest);
    const reply = await callScript(client, "commitMessages", [k.idem, k.grpmeta, k.grpmembers, k.cseq, k.hist, k.outbox, k.vpending], args);
    if (reply.length !== 1 + 3 * batch.length) throw new InternalError(`commitMessages answered ${reply.length} items for ${batch.length} messages`);

    const retry: Pending[] = [];
    let current: string | undefined;
    let committed = false;
    batch.forEach((p, i) => {
      const status = Number(reply[1 + 3 * i]);
      const seq = Number(reply[2 + 3 * i]);
      const id = String(reply[3 + 3 * i]);
      p.attempts++;
      switch (status) {
        case 0:
          committed = true;
          metrics.messagesCommitted.inc();
          p.resolve({ conversationSeq: seq, messageId: hexToUuid(id), version: Number(version), duplicate: false, attempts: p.attempts });
          return;
        case 1:
          p.resolve({ conversationSeq: seq, messageId: id === "" ? null : hexToUuid(id), version: null, duplicate: true, attempts: p.attempts });
          return;
        case -1:
          current = String(seq);
          if (p.attempts > this.opts.maxRetries) {
            p.reject(new MembershipChangedError(p.attempts));
          } else {
            metrics.membershipRetries.inc({ path: "send" });
            retry.push(p);
          }
          return;
        case -2:
        case -3:
          p.reject(new PermissionDeniedError());
          return;
        default:
          p.reject(new InternalError(`commitMessages: unknown status ${status}`));
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
