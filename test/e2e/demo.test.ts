/**
 * `qimctl demo` end to end, as a newcomer runs it: in a clean temporary directory, the real CLI
 * starts its own dev stack (real redis-server, real admin server over mTLS), walks the scenario
 * through the admin API and, with --down, stops everything again; with --secure-redis the same on
 * a Redis with TLS only and an ACL user (issue 15: "the demo passes on" such a Redis). Its last
 * step bulk-adds 2,500 users from a file in batches (issue 14: "the demo shows the bulk add").
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { outputMismatch } from "../cli/contract.js";
import { alive, filesHolding, killMentioning, ok, processesMentioning, qimctl } from "../dev/helpers.js";

const STEPS = [
  "dev-up", "create-group", "send-messages", "add-member", "remove-member", "history-boundaries",
  "conversation-summaries", "user-sessions", "bump-epoch", "rebuild-drill", "dispatch-audit", "cluster-nodes", "cmd-sync", "devices", "message-types", "reactions", "call", "room", "bulk-add",
];

describe("qimctl demo in a clean directory", { timeout: 300_000 }, () => {
  let tmp: string;
  let env: NodeJS.ProcessEnv;

  before(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), "qimctl-demo-"));
    env = { XDG_CONFIG_HOME: path.join(tmp, "xdg") };
  });

  after(async () => {
    await qimctl(["dev", "down", "--data-dir", path.join(tmp, ".qim", "demo")], { env, cwd: tmp });
    const left = killMentioning(tmp);
    rmSync(tmp, { recursive: true, force: true });
    assert.deepEqual(left, [], "the demo left processes behind");
  });

  it("narrates every step and leaves the stack running; a second run with --output json --down reuses it, every step OK, and stops it", async () => {
    const crowdDirsBefore = readdirSync(os.tmpdir()).filter((f) => f.startsWith("qim-demo-crowd-"));
    // table mode, the default data dir (.qim/demo, relative to the working directory)
    const first = await qimctl(["demo"], { env, cwd: tmp, json: false });
    assert.equal(first.code, 0, `${first.stdout}\n${first.stderr}`);
    for (const line of [/^== Create two groups$/m, /dave +sees seq 4–7 +earliest available 4/, /carol +sees seq 1–5 .*REMOVED \(leftAt 6\)/, /^== Summary$/m, /^All 19 steps OK\.$/m, /^ {5}batch 3\/3: added 500 user\(s\) as event seq 3 \(0 already members\); version 4, 2501 members$/m, /Stop it with: qimctl dev down --data-dir \.qim\/demo$/m]) {
      assert.match(first.stdout, line);
    }
    assert.match(first.stdout, /conversation-set authority: redis-hash \(development fallback/);
    // the dev stack's lines without dev up's "Try:" section: the demo is the scenario, and says how to stop once
    assert.match(first.stdout, /^== Dev stack\n {3}Dev stack started in \.qim\/demo$/m);
    assert.doesNotMatch(first.stdout, /^\s*Try:$/m);
    assert.equal(first.stdout.match(/Stop it with:/g)?.length, 1);
    const dataDir = path.join(tmp, ".qim", "demo");
    const statusRun = await qimctl(["dev", "status", "--data-dir", ".qim/demo"], { env, cwd: tmp });
    const status = ok(statusRun, "dev status after the demo");
    // test/dev/helpers.ts runs qimctl without the contract check of test/e2e/qimctl.ts: check here
    assert.equal(outputMismatch(["dev", "status"], statusRun.stdout), undefined);
    assert.equal(status.state, "up", "the stack keeps running");
    // the demo's named context, current (there was none), and the closing lines use it
    const config = JSON.parse(readFileSync(path.join(tmp, "xdg", "qimctl", "config.json"), "utf8"));
    assert.equal(config.current, "demo");
    assert.deepEqual([config.contexts.demo.endpoint, config.contexts.demo.dataDir], [status.endpoint, dataDir]);
    assert.match(first.stdout, /Look around with --context demo, e\.g\.:/);
    // the client gateway: in the stack's state and its context (qimctl client's default --url), and the closing lines show a device
    assert.match(status.gatewayUrl, /^wss:\/\/localhost:\d+$/);
    assert.equal(config.contexts.demo.gateway, status.gatewayUrl);
    assert.match(first.stdout, /^ {3}qimctl client --as [0-9a-f-]{36} --device tablet --context demo /m);

    const r = await qimctl(["demo", "--down"], { env, cwd: tmp }); // --output json added by qimctl()
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.equal(outputMismatch(["demo"], r.stdout), undefined);
    const summary = r.json;
    assert.equal(summary.ok, true);
    assert.equal(summary.failedStep, null);
    assert.deepEqual(summary.steps.map((s: any) => s.name), [...STEPS, "dev-down"]);
    for (const s of summary.steps) assert.deepEqual([s.name, s.ok, s.status, s.error], [s.name, true, "ok", null]);
    assert.equal(summary.steps[0].details.status, "reused", "the second run reuses the running stack");
    assert.equal(summary.dataDir, dataDir);
    assert.equal(summary.endpoint, status.endpoint);
    assert.match(summary.authority, /^redis-hash \(development fallback/);
    assert.equal(summary.stackRunning, false);

    // what the steps checked, as the summary reports it
    const step = (name: string) => summary.steps.find((s: any) => s.name === name).details;
    assert.equal(step("add-member").change.eventConversationSeq, 4);
    assert.equal(step("remove-member").change.eventConversationSeq, 6);
    assert.deepEqual(step("history-boundaries").dave.seqs, [4, 5, 6, 7]);
    assert.equal(step("history-boundaries").dave.earliestAvailableConversationSeq, 4);
    assert.deepEqual(step("history-boundaries").carol.seqs, [1, 2, 3, 4, 5]);
    assert.equal(step("history-boundaries").carol.leftAt, 6);
    assert.equal(step("bump-epoch").bump.reason, "demo");
    assert.equal(step("rebuild-drill").report.ok, true);
    assert.equal(step("rebuild-drill").report.users, 4);
    // the drill's report goes where drill rebuild through the demo's context writes its own: the data dir
    const reportPath = step("rebuild-drill").reportPath;
    assert.equal(reportPath, path.join(dataDir, `qim-drill-${step("rebuild-drill").report.drillId}.json`));
    assert.deepEqual(JSON.parse(readFileSync(reportPath, "utf8")), step("rebuild-drill").report);
    assert.match(first.stdout, /^ {3}Its report: .*\.qim\/demo\/qim-drill-[0-9a-f-]+\.json \(qimctl dev down --purge removes it with the stack\)\.$/m);
    assert.ok(step("dispatch-audit").audit.partitions.every((p: any) => p.verdict === "OK"));
    // alice's page: side pinned first, its unread 1 by hand (bob's one message, unread by alice)
    assert.deepEqual(step("user-sessions").page.summaries.map((x: any) => [x.pinned, x.unread > 0]), [[true, true], [false, true]]);
    assert.equal(step("user-sessions").page.summaries[0].unread, 1);
    assert.equal(step("cluster-nodes").nodes.nodes.filter((n: any) => n.alive).length, 1, "the demo's stack runs one node");
    // by hand: team's seqs 1-3 messages, 4 dave's join, 5 his message, 6 carol's removal, 7 alice's send: bob's device send is 8;
    // alice's phone read it and got no echo; her badge then counts side's one unread message (bob's) and nothing of team
    assert.deepEqual([step("devices").seq, step("devices").readSyncOnPhone, step("devices").badgeTotalUnread], [8, 0, 1]);
    // then: bob's poll seq 9, his wrong-chat message seq 10 recalled by the event at seq 11, the moderator's edit of seq 2 at seq 12
    const types = step("message-types");
    assert.deepEqual([types.pollSeq, types.recalledSeq, types.recallEventSeq, types.editEventSeq], [9, 10, 11, 12]);
    // reactions on team seq 1: bob 👍, then alice 👍 and 🎉: 👍 2, 🎉 1 at version 3; bob's phone got the first at once and the
    // window's last (the third may fall in a window of its own when the machine is slow: 2 or 3 frames); his badge stayed
    const rx = step("reactions");
    assert.deepEqual([rx.counts, rx.summaryVersion, rx.likedVersion], ["👍 2, 🎉 1", 3, 1]);
    assert.ok(rx.bobFrames >= 2 && rx.bobFrames <= 3, `bob's phone: ${rx.bobFrames} REACTION_UPDATE frames`);
    // the call: rang, then its record is team's next message: seq 13 (after the edit event at 12; reactions write no seq)
    assert.deepEqual([step("call").rang, step("call").recordSeq], ["ringing", 13]);
    // presence: bob's phone was connected when alice's watched him, then it closed
    assert.deepEqual([step("call").bobOnlineBefore, step("call").bobOfflineAfter], [true, true]);
    // the room: the first room messages of its epoch are counters 1, 2, 3 (by hand: a fresh room), in at most three frames; two online
    const room = step("room");
    assert.deepEqual([room.counters, room.online, room.epoch === room.joinedEpoch], [[1, 2, 3], 2, true]);
    assert.ok(room.bobFrames >= 1 && room.bobFrames <= 3, `bob's phone: ${room.bobFrames} ROOM_BATCH frames`);
    // the bulk add: 2,500 users in batches of 1,000, one event each, as `membership add --from-file` prints them
    const bulk = step("bulk-add");
    assert.equal(outputMismatch(["membership", "add", "--from-file", "f"], `${[...bulk.batches, bulk.summary, bulk.rerun].map((l: unknown) => JSON.stringify(l)).join("\n")}\n`), undefined);
    assert.deepEqual(bulk.batches.map((l: any) => [l.batch, l.of, l.outcome, l.users, l.changed, l.eventConversationSeq]), [[1, 3, "committed", 1000, 1000, 1], [2, 3, "committed", 1000, 1000, 2], [3, 3, "committed", 500, 500, 3]]);
    assert.deepEqual([bulk.summary.outcome, bulk.summary.changed, bulk.summary.memberCount], ["completed", 2500, 2501]);
    assert.deepEqual([bulk.rerun.outcome, bulk.rerun.changed, bulk.rerun.unchanged], ["completed", 0, 2500]);

    // --down: nothing of the stack is left
    const stopped = step("dev-down").stopped as { pid: number }[];
    assert.equal(stopped.length, 2);
    for (const s of stopped) assert.ok(!alive(s.pid), `pid ${s.pid} is gone`);
    assert.deepEqual(processesMentioning(tmp), [], "no process mentions the demo's directory");
    assert.ok(!existsSync(path.join(dataDir, "dev.json")));
    assert.ok(!existsSync(path.join(tmp, "xdg", "qimctl", "context.json")), "the old single context file is never written");
    assert.deepEqual(step("dev-down").contextsRemoved, [], "--down keeps the context (a purge would remove it)");
    assert.deepEqual(readdirSync(os.tmpdir()).filter((f) => f.startsWith("qim-demo-crowd-") && !crowdDirsBefore.includes(f)), [], "the bulk add's temporary file is removed");

    // a purge removes what the demo wrote: both runs' drill reports, the data dir, the context demo
    assert.equal(readdirSync(dataDir).filter((f) => /^qim-drill-.*\.json$/.test(f)).length, 2, "one report per run");
    const purged = ok(await qimctl(["dev", "down", "--data-dir", ".qim/demo", "--purge", "--yes"], { env, cwd: tmp }), "dev down --purge");
    assert.ok(purged.removed.includes(reportPath));
    assert.deepEqual(purged.contextsRemoved, ["demo"]);
    assert.ok(!existsSync(dataDir), "nothing of the demo is left in its data dir");
  });
});

describe("qimctl demo --secure-redis in a clean directory", { timeout: 300_000 }, () => {
  let tmp: string;
  let env: NodeJS.ProcessEnv;

  before(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), "qimctl-demo-secure-"));
    env = { XDG_CONFIG_HOME: path.join(tmp, "xdg") };
  });

  after(async () => {
    await qimctl(["dev", "down", "--data-dir", path.join(tmp, ".qim", "demo")], { env, cwd: tmp });
    const left = killMentioning(tmp);
    rmSync(tmp, { recursive: true, force: true });
    assert.deepEqual(left, [], "the demo left processes behind");
  });

  it("--output json --down: every step OK on a TLS-only Redis with an ACL user, then everything stopped; the password in no output or other file", async () => {
    const r = await qimctl(["demo", "--secure-redis", "--down"], { env, cwd: tmp }); // --output json added by qimctl()
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.equal(outputMismatch(["demo"], r.stdout), undefined);
    const summary = r.json;
    assert.equal(summary.ok, true);
    assert.equal(summary.failedStep, null);
    assert.deepEqual(summary.steps.map((s: any) => s.name), [...STEPS, "dev-down"]);
    for (const s of summary.steps) assert.deepEqual([s.name, s.ok, s.status, s.error], [s.name, true, "ok", null]);
    const dataDir = path.join(tmp, ".qim", "demo");
    assert.equal(summary.dataDir, dataDir);
    assert.equal(summary.stackRunning, false);

    // the stack it ran on: Redis TLS only, as user qim
    const up = summary.steps[0].details;
    assert.equal(up.status, "started");
    assert.deepEqual(up.redisAccess, { secure: true, user: "qim", tlsPort: up.redis.port, passwordFile: path.join(dataDir, "redis.password"), ca: path.join(dataDir, "pki", "ca.crt") });
    assert.equal(up.redis.addr, `rediss://127.0.0.1:${up.redis.port}`);
    assert.match(readFileSync(path.join(dataDir, "server.log"), "utf8"), new RegExp(`redis rediss://127\\.0\\.0\\.1:${up.redis.port} as user qim`));

    // what the steps checked, as on a plaintext Redis
    const step = (name: string) => summary.steps.find((s: any) => s.name === name).details;
    assert.deepEqual(step("history-boundaries").dave.seqs, [4, 5, 6, 7]);
    assert.deepEqual(step("history-boundaries").carol.seqs, [1, 2, 3, 4, 5]);
    assert.equal(step("rebuild-drill").report.ok, true);
    assert.ok(step("dispatch-audit").audit.partitions.every((p: any) => p.verdict === "OK"));
    assert.deepEqual([step("devices").seq, step("devices").readSyncOnPhone], [8, 0]);

    // --down: nothing of the stack is left
    const stopped = step("dev-down").stopped as { pid: number }[];
    assert.equal(stopped.length, 2);
    for (const s of stopped) assert.ok(!alive(s.pid), `pid ${s.pid} is gone`);
    assert.deepEqual(processesMentioning(tmp), [], "no process mentions the demo's directory");
    assert.ok(!existsSync(path.join(dataDir, "dev.json")));

    // the password: in its file only
    const password = readFileSync(path.join(dataDir, "redis.password"), "utf8");
    assert.ok(password.length >= 40);
    assert.ok(!r.stdout.includes(password) && !r.stderr.includes(password), "the demo printed the password");
    assert.deepEqual(filesHolding(tmp, password), [path.join(".qim", "demo", "redis.password")], "the scan finds the one file that should hold it");
    assert.deepEqual(filesHolding(tmp, password, [path.join(".qim", "demo", "redis.password")]), [], "files holding the password");
  });
});
