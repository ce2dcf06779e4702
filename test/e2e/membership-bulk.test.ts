/**
 * Issue 14, bulk from a file: `qimctl membership add|remove --from-file` through the real CLI
 * process against a real admin server process (mTLS) on a real redis-server. What happened is
 * read back independently of the command's own output: the group's CONTROL records through
 * `qimctl history` as the owner, the members through `qimctl membership list`, the version
 * through `qimctl group show`. The users are generated here, so the expected members are known
 * without the code under test.
 */
import type { MembershipBulkLine } from "../../cli/membership/results.js";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { outputMismatch } from "../cli/contract.js";
import { startRedis, type RedisServer } from "../harness/redis.js";
import { startServerProcess, type ServerProcess } from "../reliability/server-process.js";
import { baseEnv, failed, ok, QIMCTL, ROOT, run, type Run } from "./qimctl.js";

const ADMIN_ACTOR = "00000000-0000-0000-0000-000000000000";

interface ControlRecord {
  conversationSeq: number;
  kind: string;
  membership: { op: string; actor: string; users: string[] } | null;
}

/** One JSON line of a bulk run (the type the command prints). */
type Line = MembershipBulkLine;

/** Users in ascending order: the tests know each batch's users without asking the CLI. */
const usersSorted = (n: number) => Array.from({ length: n }, () => randomUUID()).sort();

/** A command's JSON lines, checked against the contract (run() checks the same on its own runs). */
function linesOf(args: readonly string[], stdout: string): Line[] {
  const mismatch = outputMismatch(args, stdout);
  assert.equal(mismatch, undefined, mismatch);
  return stdout.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Line);
}

describe("membership add|remove --from-file against a real server process", { timeout: 300_000 }, () => {
  let dir: string;
  let pki: TestPkiFiles;
  let redis: RedisServer;
  let server: ServerProcess;
  let context: string;
  const tenant = randomUUID();

  const file = (name: string, text: string) => {
    const p = path.join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  const newGroup = async (owner = randomUUID()) => ({ owner, group: ok(await run(["group", "create", "--owner", owner], { context }), "group create").group as string });
  const controlRecords = async (group: string, owner: string): Promise<ControlRecord[]> => {
    const h = ok(await run(["history", "--group", group, "--as", owner, "--limit", "1000"], { context }), "history as the owner");
    return (h.records as ControlRecord[]).filter((r) => r.kind === "control");
  };
  const members = async (group: string) => ok(await run(["membership", "list", "--group", group, "--all"], { context, maxBuffer: 16 * 1024 * 1024 }), "membership list --all").members as { userId: string; state: string }[];
  const version = async (group: string) => ok(await run(["group", "show", "--group", group], { context }), "group show").version as number;
  /** qimctl with `input` on its stdin (run() gives it none). */
  const runWithInput = (args: string[], input: string) => new Promise<Run>((resolve) => {
    const child = spawn(process.execPath, [QIMCTL, ...args, "--output", "json"], { cwd: ROOT, env: { ...baseEnv, QIMCTL_CONTEXT: context } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on("data", (d: Buffer) => { stderr += d.toString(); });
    child.once("close", (code) => resolve({ code: code ?? -1, stdout, stderr, json: undefined }));
    child.stdin.end(input);
  });

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-bulk-"));
    pki = await writeTestPki(path.join(dir, "pki"));
    redis = await startRedis();
    server = await startServerProcess({ redisAddr: redis.addr, pki, auditLog: path.join(dir, "audit.log") });
    context = path.join(dir, "context-operator.json");
    writeFileSync(context, JSON.stringify({ endpoint: server.endpoint, ca: pki.ca.certPath, cert: pki.operator.certPath, key: pki.operator.keyPath, tenant }));
  });

  after(async () => {
    await server?.stop();
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("5,000 users in batches of 1,000, SIGINT after the second batch, resumed with the same command: exactly five events, every user a member once", async (t) => {
    const { owner, group } = await newGroup();
    const users = usersSorted(5000);
    const usersFile = file("users-5000.txt", `${[...users].sort(() => Math.random() - 0.5).join("\n")}\n`);
    const args = ["membership", "add", "--group", group, "--from-file", usersFile];

    // the first run: SIGINT once two batch lines have arrived on stdout
    const child = spawn(process.execPath, [QIMCTL, ...args, "--output", "json"], { cwd: ROOT, env: { ...baseEnv, QIMCTL_CONTEXT: context } });
    let stdout = "";
    let stderr = "";
    let signalled = false;
    child.stderr.on("data", (d: Buffer) => { stderr += d.toString(); });
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
      const batchLines = stdout.split("\n").filter((l) => l.startsWith('{"type":"batch"'));
      if (!signalled && batchLines.length >= 2) {
        signalled = true;
        child.kill("SIGINT");
      }
    });
    const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
    assert.ok(signalled, `two batch lines arrived before the end: ${stdout}\n${stderr}`);
    assert.equal(code, 130, `exit 130 after SIGINT\nstdout: ${stdout}\nstderr: ${stderr}`);
    const first = linesOf(args, stdout);
    const firstBatches = first.filter((l) => l.type === "batch");
    const firstSummary = first.at(-1)!;
    assert.ok(firstBatches.length >= 2 && firstBatches.length < 5, `stopped after the batch in flight: ${firstBatches.length} batch lines`);
    assert.deepEqual(firstBatches.map((l) => [l.batch, l.of, l.outcome, l.users, l.changed]), firstBatches.map((_, i) => [i + 1, 5, "committed", 1000, 1000]));
    assert.equal(firstSummary.type, "summary");
    assert.equal(firstSummary.outcome, "interrupted");
    assert.equal(firstSummary.resume, `qimctl ${args.join(" ")} --output json`, "the resume command is this command");
    const error = JSON.parse(stderr.slice(stderr.indexOf("{"))).error as { code: string; exitCode: number; message: string };
    assert.deepEqual([error.code, error.exitCode], ["INTERRUPTED", 130]);
    assert.match(error.message, /resume with: qimctl membership add/);

    // what the interruption left, read independently: whole batches only (none half-applied)
    const afterInterrupt = await controlRecords(group, owner);
    const k = afterInterrupt.length;
    t.diagnostic(`the interrupted run answered ${firstBatches.length} batch(es) before it stopped`);
    assert.ok(k === firstBatches.length, `one event per answered batch: ${k} events, ${firstBatches.length} batch lines`);
    const activeAfterInterrupt = (await members(group)).filter((m) => m.state === "ACTIVE").map((m) => m.userId);
    assert.equal(activeAfterInterrupt.length, 1 + 1000 * k, "the owner and whole batches of 1,000");
    assert.deepEqual(activeAfterInterrupt.filter((u) => u !== owner).sort(), users.slice(0, 1000 * k), "the first batches of the sorted users");

    // resumed with the same command
    const resumed = await run(args, { context });
    assert.equal(resumed.code, 0, resumed.stderr);
    const second = linesOf(args, resumed.stdout);
    const secondBatches = second.filter((l) => l.type === "batch");
    assert.deepEqual(secondBatches.map((l) => l.batch), [1, 2, 3, 4, 5], "the same five batches");
    for (const l of secondBatches.slice(0, k)) assert.ok(l.outcome === "duplicate" || l.outcome === "noop", `batch ${l.batch} already applied: ${l.outcome}`);
    for (const l of secondBatches.slice(k)) assert.deepEqual([l.outcome, l.changed], ["committed", 1000], `batch ${l.batch}`);
    const summary = second.at(-1)!;
    assert.deepEqual([summary.type, summary.outcome, summary.users, summary.changed, summary.unchanged, summary.failedBatch, summary.resume], ["summary", "completed", 5000, 1000 * (5 - k), 1000 * k, null, null]);

    // the acceptance: five membership events in the group's history in all, every user a member once
    const events = await controlRecords(group, owner);
    assert.equal(events.length, 5, `exactly five membership events: ${events.map((e) => e.conversationSeq).join(", ")}`);
    assert.deepEqual(events.map((e) => [e.membership?.op, e.membership?.actor, e.membership?.users.length]), Array(5).fill(["join", ADMIN_ACTOR, 1000]));
    assert.deepEqual(events.flatMap((e) => e.membership!.users).sort(), users, "the five events name every user once");
    const list = await members(group);
    assert.equal(list.length, 5001);
    assert.ok(list.every((m) => m.state === "ACTIVE"));
    assert.deepEqual(list.map((m) => m.userId).filter((u) => u !== owner).sort(), users, "every user a member exactly once");
    assert.equal(await version(group), 6, "version 1 + five events");
  });

  it("bad ids are reported with their line numbers, all of them (bounded), exit 2, and nothing is sent", async () => {
    const { owner, group } = await newGroup();
    const good = usersSorted(3);
    const text = ["# users to add", good[0], "", "not-a-uuid", good[1], "  ", `${good[2]!.slice(0, 35)}`, "# done", good[2], "123e4567-e89b-12d3-a456-42661417400g"].join("\n");
    const args = ["membership", "add", "--group", group, "--from-file", file("bad.txt", text)];
    const r = failed(await run(args, { context }), 2, "bad lines");
    assert.equal(r.field, "--from-file");
    assert.match(r.message, /3 bad line\(s\), nothing was sent/);
    assert.match(r.message, /line 4: "not-a-uuid" not a UUID/);
    assert.match(r.message, /line 7: "[0-9a-f-]{35}" not a UUID/);
    assert.match(r.message, /line 10: "123e4567-e89b-12d3-a456-42661417400g" not a UUID/);
    assert.doesNotMatch(r.message, /line (1|2|5|9):/);

    // many bad lines: every one counted, the first 20 named
    const many = Array.from({ length: 45 }, (_, i) => `bad-${i + 1}`).join("\n");
    const m = failed(await run(["membership", "add", "--group", group, "--from-file", file("many.txt", `${good[0]}\n${many}\n`)], { context }), 2, "45 bad lines");
    assert.match(m.message, /45 bad line\(s\)/);
    assert.match(m.message, /line 2: "bad-1" .*line 21: "bad-20" not a UUID \(expected 8-4-4-4-12 hex digits\); and 25 more$/);
    assert.doesNotMatch(m.message, /line 22:/);

    // a CSV whose user cells are bad, a header without a user column, an unreadable file, an empty one
    const csv = failed(await run(["membership", "add", "--group", group, "--from-file", file("bad.csv", `name,user\nann,${good[0]}\nbob,\ncid\n"dee",nope\n`)], { context }), 2, "bad CSV");
    assert.match(csv.message, /line 3: "bob," the "user" column is empty; line 4: "cid" no "user" column: 1 field\(s\), "user" is column 2; line 5: "\\"dee\\",nope" the "user" column is not a UUID/);
    const noColumn = failed(await run(["membership", "add", "--group", group, "--from-file", file("nocol.csv", `name,id\nann,${good[0]}\n`)], { context }), 2, "no user column");
    assert.match(noColumn.message, /line 1: "name,id" a CSV header needs a "user" column \(columns: name, id\)/);
    const missing = failed(await run(["membership", "add", "--group", group, "--from-file", path.join(dir, "no-such-file.txt")], { context }), 2, "missing file");
    assert.match(missing.message, /^--from-file: cannot read .*no-such-file\.txt: ENOENT/);
    const empty = failed(await run(["membership", "add", "--group", group, "--from-file", file("empty.txt", "# nobody\n\n")], { context }), 2, "empty file");
    assert.match(empty.message, /names no user/);
    const pinned = failed(await run(["membership", "add", "--group", group, "--from-file", file("one.txt", `${good[0]}\n`), "--expect-version", "1"], { context }), 2, "--expect-version with --from-file");
    assert.equal(pinned.field, "--expect-version");
    const neither = failed(await run(["membership", "add", "--group", group], { context }), 2, "neither --user nor --from-file");
    assert.equal(neither.field, "--user");

    // nothing was sent: no event, the version of a new group, only the owner
    assert.deepEqual(await controlRecords(group, owner), []);
    assert.equal(await version(group), 1);
    assert.deepEqual((await members(group)).map((m) => m.userId), [owner]);
  });

  it("CSV with a user column (other columns ignored, quoted fields), duplicates folded and counted, --user added to the file's users", async () => {
    const { owner, group } = await newGroup();
    const u = usersSorted(4);
    const extra = randomUUID();
    const csv = [
      "name,\"note\",User,team",
      `ann,"likes commas, and ""quotes""",${u[0]},red`,
      `bob,"a note over`,
      `two lines",${u[1]},blue`,
      "# a comment row",
      `cid,,${u[2]!.toUpperCase()},green`,
      "",
      `ann again,,${u[0]},red`,
      `dee,, ${u[3]} ,`,
      `cid twice,,${u[2]},`,
    ].join("\r\n");
    const args = ["membership", "add", "--group", group, "--from-file", file("users.csv", csv), "--user", extra, "--user", u[3]!];
    const r = await run(args, { context });
    assert.equal(r.code, 0, r.stderr);
    const lines = linesOf(args, r.stdout);
    assert.equal(lines.length, 2, "one batch, one summary");
    const [batch, summary] = lines as [Line, Line];
    assert.deepEqual([batch.type, batch.batch, batch.of, batch.outcome, batch.users, batch.changed, batch.unchanged], ["batch", 1, 1, "committed", 5, 5, 0]);
    assert.deepEqual([summary.outcome, summary.users, summary.changed, summary.duplicates], ["completed", 5, 5, 3], "u0 and u2 twice in the file, u3 in the file and --user");
    assert.deepEqual(summary.events, [{ batch: 1, eventConversationSeq: batch.eventConversationSeq, outcome: "committed" }]);
    const events = await controlRecords(group, owner);
    assert.equal(events.length, 1);
    assert.deepEqual(events[0]!.membership!.users.sort(), [...u, extra].sort());
    assert.deepEqual(events[0]!.conversationSeq, batch.eventConversationSeq);
    assert.deepEqual((await members(group)).map((m) => m.userId).sort(), [owner, ...u, extra].sort());
  });

  it("--from-file - reads stdin", async () => {
    const { owner, group } = await newGroup();
    const users = usersSorted(1500);
    const args = ["membership", "add", "--group", group, "--from-file", "-"];
    const r = await runWithInput(args, `${users.join("\n")}\n`);
    assert.equal(r.code, 0, r.stderr);
    const lines = linesOf(args, r.stdout);
    assert.deepEqual(lines.map((l) => [l.type, l.outcome, l.users]), [["batch", "committed", 1000], ["batch", "committed", 500], ["summary", "completed", 1500]]);
    const events = await controlRecords(group, owner);
    assert.deepEqual(events.map((e) => e.membership!.users.sort()), [users.slice(0, 1000), users.slice(1000)], "the sorted users, 1,000 then 500");
    // remove from stdin needs --yes without a terminal, as every remove
    const refused = await runWithInput(["membership", "remove", "--group", group, "--from-file", "-"], users.join("\n"));
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, /"field": "--yes"/);
    assert.equal((await controlRecords(group, owner)).length, 2);
  });

  it("--dry-run plans every batch and writes nothing", async () => {
    const { owner, group } = await newGroup();
    const present = usersSorted(2);
    ok(await run(["membership", "add", "--group", group, "--user", present.join(",")], { context }), "two members first");
    const users = usersSorted(2300);
    const args = ["membership", "add", "--group", group, "--from-file", file("plan.txt", [...users, ...present].join("\n")), "--dry-run"];
    const r = await run(args, { context });
    assert.equal(r.code, 0, r.stderr);
    const lines = linesOf(args, r.stdout);
    const all = [...users, ...present].sort();
    const inBatch = (b: number) => all.slice((b - 1) * 1000, b * 1000);
    const expectedChanged = [1, 2, 3].map((b) => inBatch(b).filter((u) => !present.includes(u)).length);
    assert.deepEqual(lines.slice(0, 3).map((l) => [l.batch, l.outcome, l.users, l.changed]), [1, 2, 3].map((b, i) => [b, "planned", inBatch(b).length, expectedChanged[i]]));
    // each batch planned at the version it would apply at, the member count after it
    assert.deepEqual(lines.slice(0, 3).map((l) => [l.version, l.memberCount]), [[2, 3 + expectedChanged[0]!], [3, 3 + expectedChanged[0]! + expectedChanged[1]!], [4, 2303]]);
    assert.deepEqual([lines[3]!.type, lines[3]!.outcome, lines[3]!.changed, lines[3]!.unchanged, lines[3]!.version, lines[3]!.memberCount, lines[3]!.events], ["summary", "planned", 2300, 2, 5, 2303, []]);
    // nothing written: the one event of the setup, version 2, three members
    assert.equal((await controlRecords(group, owner)).length, 1);
    assert.equal(await version(group), 2);
    assert.equal((await members(group)).length, 3);
    // table mode: a line per batch and the summary
    const text = await run(args, { context, json: false });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^batch 1\/3: would add \d+ user\(s\) \(\d already members\) at version 2; \d+ members after$/m);
    assert.match(text.stdout, /^Dry run: would add 2300 of 2302 distinct user\(s\) in 3 batch\(es\) to group [0-9a-f-]+ \(2 already members\); version 5, 2303 members; nothing written$/m);
  });

  it("remove from a file: --yes required without a terminal; removes in batches; a batch that fails stops the run, names the batch and why, exit with its code, and a re-run resumes", async () => {
    // the owner sorts last, into batch 2: removing it is refused (FAILED_PRECONDITION, exit 4)
    const owner = "ffffffff-ffff-4fff-bfff-ffffffffffff";
    const { group } = await newGroup(owner);
    const users = usersSorted(1500);
    const added = await run(["membership", "add", "--group", group, "--from-file", file("all.txt", users.join("\n"))], { context, json: false });
    assert.equal(added.code, 0, added.stderr);
    const before = (await controlRecords(group, owner)).length;
    assert.equal(before, 2);

    const withOwner = file("leavers-with-owner.txt", [...users, owner].join("\n"));
    const unconfirmed = failed(await run(["membership", "remove", "--group", group, "--from-file", withOwner], { context }), 2, "remove without --yes");
    assert.equal(unconfirmed.field, "--yes");
    assert.equal((await controlRecords(group, owner)).length, before, "nothing sent without --yes");

    const args = ["membership", "remove", "--group", group, "--from-file", withOwner, "--yes"];
    const r = await run(args, { context });
    assert.equal(r.code, 4, `the owner's batch fails with FAILED_PRECONDITION\n${r.stdout}\n${r.stderr}`);
    const lines = linesOf(args, r.stdout);
    assert.deepEqual(lines.map((l) => [l.type, l.batch, l.outcome]), [["batch", 1, "committed"], ["summary", null, "failed"]]);
    assert.deepEqual([lines[1]!.failedBatch, lines[1]!.changed, lines[1]!.users, lines[1]!.resume], [2, 1000, 1501, `qimctl ${args.join(" ")} --output json`]);
    const error = JSON.parse(r.stderr).error as { code: string; exitCode: number; message: string };
    assert.deepEqual([error.code, error.exitCode], ["FAILED_PRECONDITION", 4]);
    assert.match(error.message, /^batch 2 of 2 failed: the owner .* cannot be removed .*; resume with: qimctl membership remove/);
    const afterFailure = await members(group);
    assert.deepEqual(afterFailure.filter((m) => m.state === "REMOVED").map((m) => m.userId).sort(), users.slice(0, 1000), "batch 1 applied");
    assert.equal(afterFailure.filter((m) => m.state === "ACTIVE").length, 501, "batch 2 not applied at all: its 500 users and the owner");

    // the cause fixed (the owner left out of the file), the same kind of run resumes
    const leavers = file("leavers.txt", users.join("\n"));
    const resumed = ["membership", "remove", "--group", group, "--from-file", leavers, "--yes"];
    const again = await run(resumed, { context });
    assert.equal(again.code, 0, again.stderr);
    const l2 = linesOf(resumed, again.stdout);
    assert.deepEqual(l2.map((l) => [l.batch, l.outcome, l.changed]), [[1, "duplicate", 0], [2, "committed", 500], [null, "completed", 500]]);
    const events = await controlRecords(group, owner);
    assert.deepEqual(events.map((e) => [e.membership!.op, e.membership!.users.length]), [["join", 1000], ["join", 500], ["remove", 1000], ["remove", 500]]);
    const final = await members(group);
    assert.deepEqual(final.filter((m) => m.state === "ACTIVE").map((m) => m.userId), [owner]);
    assert.equal(final.filter((m) => m.state === "REMOVED").length, 1500);

    // table mode says the same in words
    const text = await run(resumed, { context, json: false });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^batch 1\/2: nothing to remove: all 1000 user\(s\) not members$/m);
    assert.match(text.stdout, /^Removed 0 of 1500 distinct user\(s\) in 2 batch\(es\) from group /m);
  });
});
