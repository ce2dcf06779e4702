/**
 * `membership add` and `membership remove`: one flow, two RPCs (ADR-0021 §2). A change prints
 * what it did (event conversation_seq, version, member count); a re-run after it took effect
 * answers duplicate/noop and exits 0; `--dry-run` prints the server's plan (targets after
 * filtering, audience size, idempotency id) and writes nothing; `--expect-version` is a
 * compare-and-set (exit 4 on conflict).
 *
 * Remove is destructive (cli/confirm.ts): without a terminal it needs --yes; on a terminal it first
 * asks the server for the plan, shows it, and commits only that plan — with expect_version pinned
 * to the planned version as the server sent it, so that a change made by someone else while the
 * prompt was open is refused (exit 4) instead of silently widening what was confirmed.
 *
 * `--from-file` (issue 14) runs the same RPCs in batches (cli/membership/bulk.ts): the input is
 * checked whole first, the output is JSON lines (a flag variant of the contract), Ctrl+C stops
 * between batches, and a re-run of the same command resumes.
 */
import { createReadStream } from "node:fs";
import type { Command } from "@oclif/core/command";
import * as Flags from "@oclif/core/flags";
import type { ChangeMembersRequest, MembershipChange } from "../../admin-api/client.js";
import { ConnectedCommand } from "../base.js";
import { EXIT, PreconditionError, UsageError } from "../exit-codes.js";
import { ProgressLine, progressBar } from "../progress.js";
import { LIMITS, u64Flag, uuid, uuidList } from "../validate.js";
import { batchesOf, runBulk, type BulkRun, type MembershipOp } from "./bulk.js";
import { membershipChangeResult, type MembershipBulkLine, type MembershipChangeResult } from "./results.js";
import { bulkBatchText, bulkSummaryText, describeMembershipChange } from "./text.js";
import { badLinesText, InputTooLargeError, parseUserList, readBounded } from "./user-file.js";

/** A member version, parsed once into what the request carries (a u64): at least 1, up to 2^64−1. */
export const memberVersionFlag = u64Flag("a member version", 1n);

export const membershipChangeFlags = {
  group: Flags.string({ char: "g", required: true, description: "the group's UUID" }),
  user: Flags.string({ char: "u", multiple: true, delimiter: ",", description: `user UUID; repeat the flag or separate with commas (at most ${LIMITS.usersPerChange} distinct; with --from-file, added to the file's users)` }),
  "from-file": Flags.string({
    helpValue: "FILE",
    description: `the users from FILE (- for stdin): one UUID per line, or CSV with a "user" column; checked whole before anything is sent, then sent in batches of ${LIMITS.usersPerChange}, each its own event; re-run the same command to resume`,
  }),
  "dry-run": Flags.boolean({ description: "print the plan (targets after filtering, audience size, idempotency id) and change nothing" }),
  "expect-version": memberVersionFlag({ description: "compare-and-set: refuse (exit 4) unless the group is at this member version" }),
};

type ChangeFlags = { group: string; user?: string[]; "from-file"?: string; "dry-run": boolean; "expect-version"?: bigint; yes?: boolean };

export abstract class MembershipChangeCommand<T extends typeof Command> extends ConnectedCommand<T> {
  protected abstract readonly op: MembershipOp;

  private get changeFlags(): ChangeFlags {
    return this.flags as unknown as ChangeFlags;
  }

  protected override checkFlags(flags: Readonly<Record<string, unknown>>): void {
    const f = flags as unknown as ChangeFlags;
    if ((!f.user || f.user.length === 0) && f["from-file"] === undefined) throw new UsageError("--user", "give at least one --user, or --from-file FILE");
  }

  /** One call, or with --from-file a batched run: the result, or the run's summary line. */
  protected async change(): Promise<MembershipChangeResult | MembershipBulkLine> {
    const flags = this.changeFlags;
    if (flags["from-file"] !== undefined) return this.changeFromFile(flags["from-file"]);
    const group = uuid("--group", flags.group);
    const users = uuidList("--user", flags.user, LIMITS.usersPerChange);
    const expectVersion = flags["expect-version"];
    const dryRun = flags["dry-run"];
    const tenant = this.tenant();
    const { client } = await this.connect();
    const rpc = (req: ChangeMembersRequest): Promise<MembershipChange> => (this.op === "join" ? client.addMembers(req) : client.removeMembers(req));
    const request: ChangeMembersRequest = { tenant, group, users, dryRun, ...(expectVersion !== undefined ? { expectVersion } : {}) };

    await this.askFirst(async () => {
      const planned = await rpc({ ...request, dryRun: true });
      const plan = membershipChangeResult({ ...planned, group });
      if (plan.changed.length === 0) return undefined;
      request.expectVersion = planned.version;
      return `${describeMembershipChange(plan)}\nRemove ${plan.changed.length} member(s) from group ${group}? [y/N] `;
    });

    const result = membershipChangeResult({ ...(await rpc(request)), group });
    this.log(describeMembershipChange(result));
    return result;
  }

  /**
   * --from-file (cli/membership/bulk.ts): the input is read and checked whole, locally, before
   * the connection opens; then one call per batch. Output: JSON lines (a batch line per call, the
   * summary last) or a text line per batch and the summary; a progress bar on a terminal.
   */
  private async changeFromFile(file: string): Promise<MembershipBulkLine> {
    const flags = this.changeFlags;
    this.jsonLines = true;
    const group = uuid("--group", flags.group);
    if (flags["expect-version"] !== undefined) {
      throw new UsageError("--expect-version", "not with --from-file: every batch is its own event and moves the member version (a re-run resumes instead)");
    }
    const destructive = this.op === "remove" && !flags.yes && !flags["dry-run"];
    if (file === "-" && destructive && process.stdin.isTTY === true) {
      throw new UsageError("--yes", "the users come from stdin (--from-file -), which then cannot answer the confirmation: pass --yes (nothing was changed)");
    }
    const extra = flags.user && flags.user.length > 0 ? uuidList("--user", flags.user, Number.MAX_SAFE_INTEGER) : [];
    const list = parseUserList(await readInput(file));
    if (list.badCount > 0) throw new UsageError("--from-file", `${file === "-" ? "stdin" : file}: ${badLinesText(list)}`);
    if (list.users.length === 0) throw new UsageError("--from-file", `${file === "-" ? "stdin" : file} names no user (blank lines and # comments only)`);
    const fromFile = new Set(list.users);
    const duplicates = list.duplicates + extra.filter((u) => fromFile.has(u)).length;
    const batches = batchesOf([...list.users, ...extra]);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const rpc = (req: ChangeMembersRequest): Promise<MembershipChange> => (this.op === "join" ? client.addMembers(req) : client.removeMembers(req));
    if (this.op === "join") {
      // every user of the input is a member once the run completes: more than groups.max_members
      // of them can only fail part-way, so say it before the first batch (the server checks each batch anyway)
      const distinct = batches.reduce((n, b) => n + b.length, 0);
      const { maxMembers } = await client.getGroup({ tenant, group });
      if (maxMembers > 0 && distinct > maxMembers) {
        throw new PreconditionError("--from-file", `${file === "-" ? "stdin" : file} names ${distinct} distinct users; a group has at most ${maxMembers} current members (the server's groups.max_members): nothing was changed`);
      }
    }
    const run: BulkRun = { tenant, group, op: this.op, batches, duplicates, dryRun: flags["dry-run"], resume: this.resumeCommand(), rpc };

    // remove on a terminal: every batch planned (dry runs), the totals shown, one question for the
    // whole file, and the run pinned to the planned version (as the one-call remove)
    await this.askFirst(async () => {
      const plan = await runBulk({ ...run, dryRun: true });
      if (plan.error !== undefined) throw plan.error;
      if (plan.summary.changed === 0) return undefined;
      run.expectVersion = BigInt(plan.lines[0]!.version!);
      return `${bulkSummaryText(plan.summary, plan.lines.length)}\nRemove ${plan.summary.changed} member(s) from group ${group} in ${batches.length} batch(es)? [y/N] `;
    });

    const json = this.jsonEnabled();
    const bar = new ProgressLine(process.stderr, !json);
    const interrupt = this.deferInterrupts(() => bar.above(() => this.note("Ctrl+C: stopping after the batch in flight (it is applied whole or not at all); Ctrl+C again stops at once")));
    let usersDone = 0;
    const outcome = await runBulk({
      ...run,
      stopRequested: () => interrupt.requested,
      onSend: (batch) => bar.update(`${progressBar(batch - 1, batches.length)} batch ${batch}/${batches.length} in flight · ${usersDone}/${batches.reduce((n, b) => n + b.length, 0)} users`),
      onBatch: (line) => {
        usersDone += line.users;
        bar.above(() => (json ? process.stdout.write(`${JSON.stringify(line)}\n`) : this.log(bulkBatchText(line))));
      },
    });
    bar.clear();
    const { summary } = outcome;
    this.log(bulkSummaryText(summary, outcome.lines.length));
    if (summary.outcome === "interrupted") {
      this.failWithResult(summary, { exitCode: EXIT.INTERRUPTED, code: "INTERRUPTED", message: `interrupted after ${outcome.lines.length} of ${summary.of} batch(es); resume with: ${summary.resume}` });
    }
    if (summary.outcome === "failed") {
      const f = await this.failureOf(outcome.error);
      this.failWithResult(summary, { ...f, message: `batch ${summary.failedBatch} of ${summary.of} failed: ${f.message}; resume with: ${summary.resume}` });
    }
    return summary;
  }

  /** This invocation as a command line to run again. */
  private resumeCommand(): string {
    const words = [this.config.bin, ...this.id!.split(":"), ...this.argv];
    return words.map((w) => (/^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, "'\\''")}'`)).join(" ");
  }
}

/**
 * The whole input, a file or stdin for "-", streamed within the limits of cli/membership/user-file.ts
 * (FROM_FILE_MAX_BYTES, FROM_FILE_MAX_LINE_BYTES): past one of them the read stops there.
 */
async function readInput(file: string): Promise<string> {
  const source = file === "-" ? process.stdin : createReadStream(file);
  try {
    return await readBounded(source);
  } catch (err) {
    if (file !== "-") source.destroy();
    const name = file === "-" ? "stdin" : file;
    if (err instanceof InputTooLargeError) throw new UsageError("--from-file", `${name}: ${err.message}; nothing was sent`);
    throw new UsageError("--from-file", `cannot read ${name}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}
