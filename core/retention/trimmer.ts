import {
  COMMIT_BUCKET_COUNT, hexToUuid, RETENTION_STEPS_PER_CONVERSATION, RETENTION_TRIM_STEP_RECORDS,
  type KeySpace, type Uuid, type UuidHex,
} from "../base/index.js";
import { SOLO_GATE, unitLeaseKey, type Fence, type UnitGate } from "../cluster/index.js";
import { conversationKeys } from "../conversation/index.js";
import { bucketConversationsKey, fanoutKeys } from "../dispatch/index.js";
import type { RedisStore } from "../store/index.js";
import { CmdHistoryTrimmer, emptyCmdReport, type CmdReadSeqs, type CmdRoundReport } from "./cmd-trimmer.js";
import { walkBucketDirectory } from "./directory.js";
import { metrics } from "./metrics.js";
import { effectiveRule, policyOf, type RetentionPolicies, type RetentionPolicy, type RetentionRule } from "./policy.js";
import { trimConversationScript } from "./scripts.js";

export interface RetentionOptions {
  /** Which relay buckets this process owns (a cluster node's membership); without one, every bucket. */
  gate?: UnitGate;
  /** The clock created_at was stamped with (the conversation service's). */
  now?: () => number;
  /** History entries one trim step removes or reads (RETENTION_TRIM_STEP_RECORDS). */
  stepRecords?: number;
  /** Trim steps one conversation gets per round (RETENTION_STEPS_PER_CONVERSATION). */
  stepsPerConversation?: number;
  onError?: (err: unknown) => void;
  /**
   * Counting records of a conversation were trimmed below `floor`: caches of unread (the
   * conversation list's rows) are brought back to the definition. Awaited before the next conversation.
   */
  onTrimmed?: (tenant: Uuid, conversation: Uuid, floor: number) => Promise<void>;
  /** History entries of a conversation were trimmed below `floor` (what hangs on the messages goes too: their reactions). Awaited. */
  onHistoryTrimmed?: (tenant: Uuid, conversation: Uuid, floor: number) => Promise<void>;
  /**
   * The durable CMD read seqs of users on a channel (core/cmd-sync's state store): with it a CMD
   * channel's history also goes once every recipient has acknowledged it (issue 26), whatever the
   * rule; without it (no CMD state), only by the rules.
   */
  cmdReadSeqs?: CmdReadSeqs;
}

/** What a trim of one conversation did (or, dry, would do in its first step). */
export interface ConversationTrim {
  tenant: Uuid;
  conversation: Uuid;
  rule: RetentionRule;
  /** Where the rule came from: "group", "class:NAME", "none". */
  source: string;
  earliestBefore: number;
  earliestAfter: number;
  histRemoved: number;
  idxRemoved: number;
  idemRemoved: number;
  /** The rule wants more than this round did (dry: than one step shows). */
  more: boolean;
  /** Why nothing was done: records still waiting for dispatch, the bucket's lease moved. */
  skipped: "pending" | "nogroup" | "fenced" | null;
}

export interface RoundReport {
  dryRun: boolean;
  bucketsOwned: number;
  conversations: number;
  histRemoved: number;
  idxRemoved: number;
  idemRemoved: number;
  behind: number;
  skipped: number;
  /** Conversations with something to trim (at most `listLimit` of them). */
  trims: ConversationTrim[];
  /** The CMD channels of the same buckets (cmd-trimmer.ts). */
  cmd: CmdRoundReport;
  /** A dry run stopped at the bucket where `listLimit` entries were listed: the counts cover the buckets before it. */
  stoppedEarly: boolean;
}

/**
 * The retention trimming task (issue 26): per relay bucket, at the bucket's lease holder (the relay's
 * own gate: the owner that marks the bucket's commits also trims its conversations, fenced by the same
 * lease inside the script), walks the bucket's directory of conversations in pages and trims each by
 * its rule in bounded steps (lua/retention/trimConversation). Never one Redis call over a whole
 * history: a step touches at most `stepRecords` entries.
 */
export class RetentionTrimmer {
  private readonly gate: UnitGate;
  private readonly now: () => number;
  private readonly stepRecords: number;
  private readonly stepsPerConversation: number;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = true;
  private readonly cmd: CmdHistoryTrimmer;
  /** Rounds run one after another: the background task's and any an operator asks for never overlap. */
  private rounds: Promise<unknown> = Promise.resolve();

  constructor(private readonly store: RedisStore, private readonly keys: KeySpace, readonly policies: RetentionPolicies, private readonly opts: RetentionOptions = {}) {
    this.gate = opts.gate ?? SOLO_GATE;
    this.now = opts.now ?? Date.now;
    this.stepRecords = opts.stepRecords ?? RETENTION_TRIM_STEP_RECORDS;
    this.stepsPerConversation = opts.stepsPerConversation ?? RETENTION_STEPS_PER_CONVERSATION;
    this.cmd = new CmdHistoryTrimmer(store, keys, policies, this.gate, {
      now: this.now, stepRecords: this.stepRecords, stepsPerChannel: this.stepsPerConversation, ...(opts.cmdReadSeqs ? { readSeqs: opts.cmdReadSeqs } : {}),
    });
  }

  /** Runs a round every `intervalMs` (the next one starts after the last ended). */
  start(intervalMs: number): void {
    if (intervalMs <= 0 || !this.stopped) return;
    this.stopped = false;
    const tick = () => {
      if (this.stopped) return;
      this.running = this.runRound().catch((err) => this.opts.onError?.(err)).finally(() => {
        this.running = null;
        if (!this.stopped) this.timer = setTimeout(tick, intervalMs);
      });
    };
    this.timer = setTimeout(tick, intervalMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  /**
   * One round over every bucket this process owns (or only `tenant`'s conversations). A dry run
   * writes nothing and reports each conversation's first step: what would go now, and `more`
   * when the rule wants more than one step.
   */
  runRound(o: { dryRun?: boolean; tenant?: Uuid; listLimit?: number } = {}): Promise<RoundReport> {
    const round = this.rounds.then(() => this.round(o));
    this.rounds = round.catch(() => undefined);
    return round;
  }

  private async round(o: { dryRun?: boolean; tenant?: Uuid; listLimit?: number }): Promise<RoundReport> {
    const dryRun = o.dryRun ?? false;
    const listLimit = o.listLimit ?? 1000;
    const report: RoundReport = { dryRun, bucketsOwned: 0, conversations: 0, histRemoved: 0, idxRemoved: 0, idemRemoved: 0, behind: 0, skipped: 0, trims: [], cmd: emptyCmdReport(), stoppedEarly: false };
    const policyCache = new Map<string, Promise<RetentionPolicy | null>>();
    try {
      for (let bucket = 0; bucket < COMMIT_BUCKET_COUNT; bucket++) {
        if (!this.gate.owns("relay", bucket)) continue;
        // a dry run answers a person: once either list is full (each is capped at listLimit on
        // its own), what it shows is enough and the rest of the walk would only be counted
        if (dryRun && (report.trims.length >= listLimit || report.cmd.trims.length >= listLimit)) {
          report.stoppedEarly = true;
          break;
        }
        report.bucketsOwned++;
        await this.trimBucket(bucket, dryRun, o.tenant, policyCache, report, listLimit);
        await this.cmd.trimBucket(bucket, dryRun, o.tenant, policyCache, report.cmd, listLimit);
      }
    } catch (err) {
      if (!dryRun) metrics.rounds.inc({ outcome: "error" });
      throw err;
    }
    if (!dryRun) {
      metrics.rounds.inc({ outcome: "ok" });
      metrics.behind.set(report.behind + report.cmd.behind);
      metrics.lastRound.set(Math.floor(Date.now() / 1000));
    }
    return report;
  }

  private async trimBucket(bucket: number, dryRun: boolean, tenant: Uuid | undefined, policies: Map<string, Promise<RetentionPolicy | null>>, report: RoundReport, listLimit: number): Promise<void> {
    await walkBucketDirectory(this.store, this.gate, bucket, bucketConversationsKey(this.keys, bucket), tenant, async (ref, fence) => {
      const [tHex, cHex] = ref.split("|") as [UuidHex, UuidHex];
      const t = await this.trimOne(bucket, fence, hexToUuid(tHex), hexToUuid(cHex), await policyOf(this.policies, policies, tHex), dryRun);
      report.conversations++;
      report.histRemoved += t.histRemoved;
      report.idxRemoved += t.idxRemoved;
      report.idemRemoved += t.idemRemoved;
      if (t.more) report.behind++;
      if (t.skipped) report.skipped++;
      if (t.skipped === "fenced") return false;
      if ((t.histRemoved > 0 || t.skipped || t.earliestAfter > t.earliestBefore) && report.trims.length < listLimit) report.trims.push(t);
      return true;
    });
  }

  /** Trims one conversation by its rule, at most `stepsPerConversation` steps (one when dry). */
  private async trimOne(bucket: number, fence: Fence, tenant: Uuid, conversation: Uuid, policy: RetentionPolicy | null, dryRun: boolean): Promise<ConversationTrim> {
    // a tenant without a policy has no group with its own setting either (setGroup marks the
    // tenant's policy first): nothing to read for its conversations
    const { rule, source } = effectiveRule(policy, policy === null ? null : await this.policies.group(tenant, conversation));
    const out: ConversationTrim = { tenant, conversation, rule, source, earliestBefore: 0, earliestAfter: 0, histRemoved: 0, idxRemoved: 0, idemRemoved: 0, more: false, skipped: null };
    // a rule that keeps everything costs no script call (a tenant without a policy: every conversation, every round)
    if (rule.maxAgeMs === 0 && rule.maxCount === 0) return out;
    const ck = conversationKeys(this.keys, tenant, conversation);
    const keys = { ...ck, fanoutPending: fanoutKeys(this.keys, bucket).fanoutPending, lease: unitLeaseKey(this.keys, "relay", bucket) };
    const client = this.store.clientFor(ck.tag);
    const steps = dryRun ? 1 : this.stepsPerConversation;
    for (let i = 0; i < steps; i++) {
      const r = await trimConversationScript.run(client, keys, {
        owner: fence.owner, token: fence.token, outboxRef: ck.outboxRef, nowMs: this.now(),
        maxAgeMs: rule.maxAgeMs, maxCount: rule.maxCount, budget: this.stepRecords, dryRun,
      });
      if (r.status === "FENCED") {
        this.gate.refused("relay", bucket, "retention_trim", fence);
        out.skipped = "fenced";
        break;
      }
      if (r.status === "SKIPPED") {
        if (i === 0) { out.earliestBefore = out.earliestAfter = r.earliest; }
        out.skipped = r.reason;
        if (!dryRun) metrics.skipped.inc({ reason: r.reason });
        break;
      }
      if (i === 0) out.earliestBefore = r.earliestBefore;
      out.earliestAfter = r.earliestAfter;
      out.histRemoved += r.histRemoved;
      out.idxRemoved += r.idxRemoved;
      out.idemRemoved += r.idemRemoved;
      out.more = r.more;
      if (!r.more) break;
    }
    if (!dryRun && out.histRemoved > 0) await this.opts.onHistoryTrimmed?.(tenant, conversation, out.earliestAfter);
    if (!dryRun && out.idxRemoved > 0) await this.opts.onTrimmed?.(tenant, conversation, out.earliestAfter);
    if (!dryRun) {
      metrics.trimmed.inc({ kind: "history" }, out.histRemoved);
      metrics.trimmed.inc({ kind: "unread_index" }, out.idxRemoved);
      metrics.trimmed.inc({ kind: "idempotency" }, out.idemRemoved);
    }
    return out;
  }

  /** One conversation's trim, at its bucket's owner (tests, the admin RPC's single-group run). */
  async trimConversation(tenant: Uuid, conversation: Uuid, o: { dryRun?: boolean } = {}): Promise<ConversationTrim | null> {
    const bucket = conversationKeys(this.keys, tenant, conversation).bucket;
    const fence = this.gate.enter("relay", bucket);
    if (!fence) return null;
    try {
      return await this.trimOne(bucket, fence, tenant, conversation, await this.policies.tenant(tenant), o.dryRun ?? false);
    } finally {
      this.gate.leave("relay", bucket);
    }
  }
}
