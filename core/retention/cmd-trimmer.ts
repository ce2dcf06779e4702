/**
 * Retention of CMD history (issue 26): a CMD channel's history and idempotency index are trimmed
 * by the same rules as conversations. A group-sourced channel (`<group>____cmd`, type 2) follows its
 * group's rule (the group's own, else its class, else the tenant's default class); any other
 * channel follows the tenant's default class. Walked per commit bucket by the bucket's relay lease
 * holder, beside the bucket's conversations, over a directory of the bucket's CMD channels that
 * this task fills from the bucket's recent-commit index (the commit path writes nothing more).
 */
import {
  bucketTag, CMD_MAX_RECIPIENTS, hexToUuid, type KeySpace, type Uuid, type UuidHex,
} from "../base/index.js";
import { unitLeaseKey, type Fence, type UnitGate } from "../cluster/index.js";
import { cmdChannelKeys, cmdEntryAudience, cmdRecentKey, sourceGroupOf, type CommandChannelKey } from "../cmd-log/index.js";
import type { RedisClient, RedisStore } from "../store/index.js";
import { walkBucketDirectory } from "./directory.js";
import { cmdChannelDirectoryKey, cmdTrimStateKey } from "./keys.js";
import { metrics } from "./metrics.js";
import { effectiveRule, policyOf, type RetentionPolicies, type RetentionPolicy, type RetentionRule } from "./policy.js";
import { trimCmdHistoryScript } from "./scripts.js";

/**
 * Acknowledgement reads (one user's CMD read seq on the channel each) one channel's check makes per
 * round at most: CMD_MAX_RECIPIENTS, so that one message's whole audience always fits.
 */
export const CMD_ACK_TRIM_READS = CMD_MAX_RECIPIENTS;
/**
 * History entries read per page while the acknowledged prefix is looked for, at most; the first
 * page is CMD_ACK_TRIM_FIRST_PAGE, the later ones sized by the entries seen so that a page is about
 * CMD_ACK_TRIM_PAGE_BYTES (an entry holds up to 10,000 recipients and 64 KiB of payload: ~410 KB).
 */
export const CMD_ACK_TRIM_PAGE = 100;
export const CMD_ACK_TRIM_FIRST_PAGE = 8;
export const CMD_ACK_TRIM_PAGE_BYTES = 1024 * 1024;
/** Users whose read seqs are asked for in one call of the reader. */
export const CMD_ACK_TRIM_SLICE = 256;

/**
 * The durable CMD read seqs (max of read and deleted-to seq) of users on one channel, 0 for a user
 * without a row: core/cmd-sync's state store (RetentionOptions.cmdReadSeqs).
 */
export type CmdReadSeqs = (tenant: Uuid, channel: CommandChannelKey, users: readonly Uuid[]) => Promise<Map<Uuid, number>>;

/** Entries of a bucket's recent-commit index read per page while the directory is filled. */
export const CMD_DIRECTORY_FILL_PAGE = 1000;
/** Pages of the recent-commit index one round reads per bucket at most (the rest: next round). */
export const CMD_DIRECTORY_FILL_PAGES = 20;
const RECENT_CURSOR_FIELD = "_recent";

/** What a trim of one CMD channel did (or, dry, would do in its first step). */
export interface CmdChannelTrim {
  tenant: Uuid;
  channelType: number;
  channelId: string;
  rule: RetentionRule;
  source: string;
  /** The highest seq every recipient of every entry up to it had acknowledged (0: none, or no CMD state to ask). */
  ackedThrough: number;
  histRemoved: number;
  idemRemoved: number;
  more: boolean;
  skipped: "fenced" | null;
}

/** The CMD part of a round's report (RoundReport.cmd). */
export interface CmdRoundReport {
  channels: number;
  histRemoved: number;
  idemRemoved: number;
  behind: number;
  /** Channels that left the directory: nothing of them is left to trim. */
  forgotten: number;
  trims: CmdChannelTrim[];
}

export function emptyCmdReport(): CmdRoundReport {
  return { channels: 0, histRemoved: 0, idemRemoved: 0, behind: 0, forgotten: 0, trims: [] };
}

/** "tenantHex|type|channelId" of a cmdrecent member "tenantHex|type|channelId|seq". */
function refOfRecent(member: string): string {
  return member.slice(0, member.lastIndexOf("|"));
}

function parseRef(ref: string): { tenantHex: UuidHex; channelType: number; channelId: string } {
  const a = ref.indexOf("|");
  const b = ref.indexOf("|", a + 1);
  return { tenantHex: ref.slice(0, a) as UuidHex, channelType: Number(ref.slice(a + 1, b)), channelId: ref.slice(b + 1) };
}

export class CmdHistoryTrimmer {
  constructor(
    private readonly store: RedisStore,
    private readonly keys: KeySpace,
    private readonly policies: RetentionPolicies,
    private readonly gate: UnitGate,
    private readonly opts: { now: () => number; stepRecords: number; stepsPerChannel: number; readSeqs?: CmdReadSeqs },
  ) {}

  /** One bucket: the directory brought up to date from the recent-commit index, then each channel trimmed by its rule. */
  async trimBucket(bucket: number, dryRun: boolean, tenant: Uuid | undefined, policies: Map<string, Promise<RetentionPolicy | null>>, report: CmdRoundReport, listLimit: number): Promise<void> {
    // a dry run does not write the directory: the channels it would have added are walked too
    const extra = await this.fillDirectory(bucket, dryRun);
    await walkBucketDirectory(this.store, this.gate, bucket, cmdChannelDirectoryKey(this.keys, bucket), tenant, async (ref, fence) => {
      const t = await this.trimChannel(bucket, fence, ref, policies, dryRun, report);
      if (t.skipped === "fenced") return false;
      if ((t.histRemoved > 0 || t.idemRemoved > 0) && report.trims.length < listLimit) report.trims.push(t);
      return true;
    }, [...extra]);
  }

  /**
   * Adds the channels committed to since the last round (the bucket's cmdrecent from the stored
   * cursor, "ms|offset": entries of one ms are counted so a page boundary inside one ms neither
   * skips nor loops). Dry: nothing written; the refs are returned to be walked.
   */
  private async fillDirectory(bucket: number, dryRun: boolean): Promise<Set<string>> {
    const client = this.store.clientFor(bucketTag(bucket));
    const stateKey = cmdTrimStateKey(this.keys, bucket);
    const stored = (await client.hget(stateKey, RECENT_CURSOR_FIELD)) ?? "0|0";
    const [msText, offText] = stored.split("|");
    let ms = Number(msText) || 0;
    let offset = Number(offText) || 0;
    const seen = new Map<string, number>();
    for (let p = 0; p < CMD_DIRECTORY_FILL_PAGES; p++) {
      const raw = await client.zrangebyscore(cmdRecentKey(this.keys, bucket), ms, "+inf", "WITHSCORES", "LIMIT", offset, CMD_DIRECTORY_FILL_PAGE);
      if (raw.length === 0) break;
      for (let i = 0; i < raw.length; i += 2) {
        const ref = refOfRecent(raw[i]!);
        const at = Number(raw[i + 1]);
        if ((seen.get(ref) ?? -1) < at) seen.set(ref, at);
      }
      const lastMs = Number(raw[raw.length - 1]);
      let sameMs = 0;
      for (let i = raw.length - 1; i >= 0 && Number(raw[i]) === lastMs; i -= 2) sameMs++;
      offset = lastMs === ms ? offset + raw.length / 2 : sameMs;
      ms = lastMs;
      if (raw.length / 2 < CMD_DIRECTORY_FILL_PAGE) break;
    }
    if (dryRun) return new Set(seen.keys());
    if (seen.size > 0) {
      const dir = cmdChannelDirectoryKey(this.keys, bucket);
      const entries = [...seen.entries()];
      for (let i = 0; i < entries.length; i += CMD_DIRECTORY_FILL_PAGE) {
        const args = entries.slice(i, i + CMD_DIRECTORY_FILL_PAGE).flatMap(([ref, at]) => [at, ref]);
        await client.zadd(dir, "GT", ...(args as [number, string]));
      }
    }
    // a bucket with no new commit writes nothing (a round over 256 idle buckets is 256 reads, no writes)
    if (`${ms}|${offset}` !== stored) await client.hset(stateKey, RECENT_CURSOR_FIELD, `${ms}|${offset}`);
    return new Set();
  }

  private async trimChannel(bucket: number, fence: Fence, ref: string, policies: Map<string, Promise<RetentionPolicy | null>>, dryRun: boolean, report: CmdRoundReport): Promise<CmdChannelTrim> {
    const { tenantHex, channelType, channelId } = parseRef(ref);
    const tenant = hexToUuid(tenantHex);
    const policy = await policyOf(this.policies, policies, tenantHex);
    const channel = { channelType, channelId };
    const group = sourceGroupOf(channel);
    const { rule, source } = effectiveRule(policy, policy !== null && group !== null ? await this.policies.group(tenant, group) : null);
    report.channels++;
    const out: CmdChannelTrim = { tenant, channelType, channelId, rule, source, ackedThrough: 0, histRemoved: 0, idemRemoved: 0, more: false, skipped: null };
    const k = cmdChannelKeys(this.keys, tenant, channel);
    // read before the fenced steps: an acknowledgement only grows, so a later one can only trim more
    out.ackedThrough = await this.ackedThrough(tenant, channel, k.hist, this.store.clientFor(k.tag));
    if (rule.maxAgeMs === 0 && rule.maxCount === 0 && out.ackedThrough === 0) return out;
    const keys = { lease: unitLeaseKey(this.keys, "relay", bucket), cmdseq: k.seq, cmdhist: k.hist, cmdidem: k.idem, cmdtrim: cmdTrimStateKey(this.keys, bucket) };
    const client = this.store.clientFor(k.tag);
    let left = { hist: -1, idem: -1 };
    const steps = dryRun ? 1 : this.opts.stepsPerChannel;
    for (let i = 0; i < steps; i++) {
      const r = await trimCmdHistoryScript.run(client, keys, {
        owner: fence.owner, token: fence.token, channelRef: ref, nowMs: this.opts.now(),
        maxAgeMs: rule.maxAgeMs, maxCount: rule.maxCount, budget: this.opts.stepRecords, dryRun, ackedThrough: out.ackedThrough,
      });
      if (r.status === "FENCED") {
        this.gate.refused("relay", bucket, "retention_trim", fence);
        out.skipped = "fenced";
        return out;
      }
      out.histRemoved += r.histRemoved;
      out.idemRemoved += r.idemRemoved;
      out.more = r.more;
      left = { hist: r.histLeft, idem: r.idemLeft };
      if (!r.more) break;
    }
    report.histRemoved += out.histRemoved;
    report.idemRemoved += out.idemRemoved;
    if (out.more) report.behind++;
    if (!dryRun) {
      metrics.trimmed.inc({ kind: "cmd_history" }, out.histRemoved);
      metrics.trimmed.inc({ kind: "cmd_idempotency" }, out.idemRemoved);
      // nothing left of the channel to trim: it leaves the directory until its next commit
      if (left.hist === 0 && left.idem === 0) {
        await client.zrem(cmdChannelDirectoryKey(this.keys, bucket), ref);
        report.forgotten++;
      }
    }
    return out;
  }

  /**
   * The highest seq S such that every recipient of every history entry up to S has acknowledged it
   * (durable read seq ≥ the entry's seq): the entries from the oldest on, in pages of about
   * CMD_ACK_TRIM_PAGE_BYTES (at most CMD_ACK_TRIM_PAGE entries), each recipient's read seq asked once (in slices of CMD_ACK_TRIM_SLICE), at
   * most CMD_ACK_TRIM_READS asked per round; the first entry someone has not acknowledged, or the
   * budget, ends it. 0 without a reader (no CMD sync on this node).
   */
  private async ackedThrough(tenant: Uuid, channel: CommandChannelKey, hist: string, client: RedisClient): Promise<number> {
    const read = this.opts.readSeqs;
    if (!read) return 0;
    const known = new Map<Uuid, number>();
    let asked = 0;
    let through = 0;
    let bytes = 0;
    let entries = 0;
    for (let offset = 0, size = CMD_ACK_TRIM_FIRST_PAGE; ; offset += size) {
      if (entries > 0) size = Math.max(1, Math.min(CMD_ACK_TRIM_PAGE, Math.floor(CMD_ACK_TRIM_PAGE_BYTES / (bytes / entries))));
      const page = await client.zrange(hist, String(offset), String(offset + size - 1));
      for (const entry of page) {
        bytes += entry.length;
        entries++;
        const m = cmdEntryAudience(entry);
        const unknown = m.recipients.filter((u) => !known.has(u));
        if (asked + unknown.length > CMD_ACK_TRIM_READS) return through;
        asked += unknown.length;
        for (let i = 0; i < unknown.length; i += CMD_ACK_TRIM_SLICE) {
          const slice = unknown.slice(i, i + CMD_ACK_TRIM_SLICE);
          const seqs = await read(tenant, channel, slice);
          for (const u of slice) known.set(u, seqs.get(u) ?? 0);
          // the first recipient behind ends it: the rest of the audience need not be asked
          if (slice.some((u) => known.get(u)! < m.seq)) return through;
        }
        if (m.recipients.some((u) => known.get(u)! < m.seq)) return through;
        through = m.seq;
      }
      if (page.length < size) return through;
    }
  }
}
