/**
 * End to end, session projection: a real redis-server, the real admin server over real mTLS and
 * the real `qimctl` process for `sessions` (no --group), `projection epoch|bump|rebuild|status`,
 * `dispatch audit` and `drill rebuild` — including a drill that must fail because a row of the
 * authority was removed behind the projection's back.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { AdminServer } from "../../server/node.js";
import { listKeys, RedisHashAuthority, RedisStore, uuidToHex } from "../../core/index.js";
import { CLIENT_NAMES, type TestPkiFiles, type TestPkiName } from "../certs/fixture.js";
import { parseJUnit } from "../harness/junit.js";
import type { RedisServer } from "../harness/redis.js";
import { failed, ok, run, startE2eServer } from "./qimctl.js";
import { checkpointKey, ucsDeadKey, ucsPendingKey } from "../../core/index.js";
import { newUuid } from "../../core/index.js";
import { parseUuid, type Uuid } from "../../core/index.js";

describe("qimctl: session projection, dispatch audit and rebuild drill against the real server", { timeout: 420_000 }, () => {
  let redis: RedisServer;
  let server: AdminServer;
  let dir: string;
  let pki: TestPkiFiles;
  const tenant = newUuid();
  const ctx: Partial<Record<TestPkiName, string>> = {};
  const [owner, a, b, c, d] = Array.from({ length: 5 }, () => newUuid()) as [Uuid, Uuid, Uuid, Uuid, Uuid];
  /** user → the groups they have (had) a conversation in. */
  const expected = new Map<string, Set<string>>();
  const groups: string[] = [];

  const contextFor = (who: TestPkiName): string => {
    const file = path.join(dir, `context-${who}.json`);
    writeFileSync(file, JSON.stringify({ endpoint: `localhost:${server.port}`, ca: pki.ca.certPath, tenant, cert: pki[who].certPath, key: pki[who].keyPath }));
    return file;
  };

  /** Removes rows of the server's authority directly, as a lost write would. */
  const removeFromAuthority = async (user: Uuid, conversationText: string) => {
    const conversation = parseUuid(conversationText, "conversation");
    const store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
    try {
      const authority = new RedisHashAuthority(store, server.runtime.keys);
      await authority.remove(tenant, user, [conversation]);
      assert.ok(!(await authority.conversations(tenant, user)).some((r) => r.conversation === conversation));
    } finally {
      await store.close();
    }
  };

  /** Polls `projection status` until every partition's lag is 0 and nothing is pending (bounded by attempts). */
  const settled = async () => {
    let last: any;
    for (let i = 0; i < 60; i++) {
      last = ok(await run(["projection", "status"], { context: ctx.viewer! }), "projection status");
      if (last.partitions.every((p: any) => p.lag === 0) && last.pending.every((p: any) => p.depth === 0)) return last;
    }
    assert.fail(`the projection did not settle: ${JSON.stringify(last)}`);
  };

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-projection-e2e-"));
    ({ pki, redis, server } = await startE2eServer(dir));
    for (const who of ["admin", "operator", "viewer", "drill"] as const) ctx[who] = contextFor(who);
  });

  after(async () => {
    await server?.close();
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("groups, messages and membership changes give several users several conversations; sessions lists them from the projection", async () => {
    const have = (user: string, group: string) => (expected.get(user) ?? expected.set(user, new Set()).get(user)!).add(group);
    const create = async (members: string[]) => {
      const g = ok(await run(["group", "create", "--owner", owner, ...members.flatMap((m) => ["--member", m])], { context: ctx.operator! }), "group create").group as string;
      groups.push(g);
      return g;
    };
    const send = async (group: string, as: string, text: string) => ok(await run(["message", "send", "--group", group, "--as", as, "--text", text], { context: ctx.drill! }), `send in ${group}`);
    const g1 = await create([a, b]);
    const g2 = await create([a]);
    const g3 = await create([b, c]);
    await send(g1, owner, "hello g1");
    await send(g2, a, "hello g2");
    await send(g3, c, "hello g3");
    ok(await run(["membership", "add", "--group", g2, "--user", b, "--user", d], { context: ctx.operator! }), "add b, d to g2");
    await send(g2, d, "d speaks");
    ok(await run(["membership", "remove", "--group", g1, "--user", a, "--yes"], { context: ctx.operator! }), "remove a from g1");
    ok(await run(["membership", "add", "--group", g3, "--user", a], { context: ctx.operator! }), "add a to g3");
    await send(g3, a, "a in g3");
    // whoever received a record of a group has that conversation (a removed user keeps it)
    for (const g of [g1, g2, g3]) have(owner, g);
    for (const g of [g1, g2, g3]) have(a, g);
    for (const g of [g1, g2, g3]) have(b, g);
    have(c, g3);
    have(d, g2);

    const status = await settled();
    assert.equal(status.partitions.length, 8);
    assert.ok(status.partitions.every((p: any) => p.verdict === "OK"), JSON.stringify(status.partitions));
    assert.match(status.authority, /^redis-hash \(development fallback/);
    assert.equal(status.retentionMs, 86_400_000);
    assert.equal(status.failure, null);
    assert.deepEqual(status.pending, [{ instance: 0, depth: 0, deadLetters: 0 }]);

    // the conversation list's rows follow the projection within its compaction window: poll, bounded
    for (const [user, gs] of expected) {
      let s: any;
      for (let i = 0; i < 200; i++) {
        s = ok(await run(["sessions", "--user", user], { context: ctx.viewer! }), `sessions ${user}`);
        if (s.total === gs.size) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.deepEqual(s.summaries.map((x: any) => x.group).sort(), [...gs].sort(), `sessions of ${user}`);
      assert.equal(s.total, gs.size);
      assert.equal(typeof s.snapshotRevision, "number");
      assert.equal(s.projectionComplete, true);
    }
    const sa = ok(await run(["sessions", "--user", a], { context: ctx.viewer! }), "sessions a");
    assert.equal(sa.summaries.find((x: any) => x.group === g1).state, "REMOVED");
    assert.equal(sa.summaries[0].group, g3, "newest activity first");
    const page = ok(await run(["sessions", "--user", a, "--limit", "1"], { context: ctx.viewer! }), "sessions a --limit 1");
    assert.equal(page.summaries.length, 1);
    assert.equal(page.total, 3);
    const text = await run(["sessions", "--user", a], { context: ctx.viewer!, json: false });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /3 conversation\(s\), snapshot revision \d+/);
    assert.ok(text.stdout.includes(g3));
  });

  it("dispatch audit exits 0 when every partition is OK", async () => {
    const audit = ok(await run(["dispatch", "audit"], { context: ctx.viewer! }), "dispatch audit");
    assert.equal(audit.ok, true);
    assert.equal(audit.partitions.length, 8);
    assert.ok(audit.partitions.every((p: any) => p.verdict === "OK" && p.lost === null && p.lag === 0));
    const text = await run(["dispatch", "audit"], { context: ctx.drill!, json: false });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^PARTITION +VERDICT +CHECKPOINT/);
  });

  it("projection bump --reason x --yes increments the epoch projection epoch shows; without --yes and a terminal it is a usage error", async () => {
    const before = ok(await run(["projection", "epoch"], { context: ctx.viewer! }), "projection epoch");
    const noYes = failed(await run(["projection", "bump", "--reason", "x"], { context: ctx.operator! }), 2, "bump without --yes");
    assert.equal(noYes.field, "--yes");
    assert.match(noYes.message, /not a terminal.*--yes/);
    const viewer = failed(await run(["projection", "bump", "--reason", "x", "--yes"], { context: ctx.viewer! }), 6, "viewer bump");
    assert.equal(viewer.code, "PERMISSION_DENIED");
    assert.equal(ok(await run(["projection", "epoch"], { context: ctx.viewer! }), "epoch").epoch, before.epoch, "refusals changed nothing");

    const bumped = ok(await run(["projection", "bump", "--reason", "x", "--yes"], { context: ctx.operator! }), "bump");
    assert.equal(bumped.epoch, before.epoch + 1);
    assert.equal(bumped.reason, "x");
    assert.equal(bumped.by, CLIENT_NAMES.operator);
    const after = ok(await run(["projection", "epoch"], { context: ctx.viewer! }), "projection epoch after");
    assert.equal(after.epoch, before.epoch + 1);
    assert.deepEqual([after.bumps[0].epoch, after.bumps[0].reason, after.bumps[0].by], [before.epoch + 1, "x", CLIENT_NAMES.operator]);
    const text = await run(["projection", "epoch"], { context: ctx.viewer!, json: false });
    assert.match(text.stdout, new RegExp(`^epoch: ${before.epoch + 1}\\n`));

    // the user's mark is now behind: rebuild merges their set back now
    const rb = ok(await run(["projection", "rebuild", "--user", c], { context: ctx.operator! }), "projection rebuild");
    assert.deepEqual(rb, { tenant, user: c, epoch: before.epoch + 1, rebuilt: true, merged: 1, mark: before.epoch + 1 });
    const again = await run(["projection", "rebuild", "--user", c], { context: ctx.operator!, json: false });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /^Nothing to do: /);
    const sessions = ok(await run(["sessions", "--user", d], { context: ctx.viewer! }), "sessions d after bump");
    assert.deepEqual(sessions.summaries.map((x: any) => x.group), [groups[1]]);
  });

  it("drill rebuild --sample 50 exits 0 with an ok report; a row removed from the authority makes it exit 4 naming user, conversation and field", async () => {
    await settled();
    const reportFile = path.join(dir, "drill-1.json");
    const okJunit = path.join(dir, "drill-1.xml");
    const drill = ok(await run(["drill", "rebuild", "--sample", "50", "--reason", "e2e", "--report", reportFile, "--junit", okJunit, "--yes"], { context: ctx.drill! }), "drill rebuild");
    assert.equal(drill.ok, true, JSON.stringify(drill.differences));
    assert.equal(drill.users, expected.size);
    assert.ok(drill.users > 0);
    assert.ok(drill.conversationsBefore > 0);
    assert.equal(drill.conversationsAfter, drill.conversationsBefore);
    assert.equal(drill.conversationsBefore, [...expected.values()].reduce((n, s) => n + s.size, 0));
    assert.equal(drill.epochAfter, drill.epochBefore + 1);
    assert.equal(drill.wipe, "projection");
    assert.deepEqual(drill.differences, []);
    // the conversation list was compared too: one row per conversation each user has (a removed user keeps it)
    assert.equal(drill.listRowsCompared, [...expected.values()].reduce((n, s) => n + s.size, 0));
    assert.equal(drill.reportPath, reportFile);
    const { reportPath: _p, ...report } = drill;
    assert.deepEqual(JSON.parse(readFileSync(reportFile, "utf8")), report, "the report file is the report");
    assert.deepEqual(drill.checkedUsers.map((u: any) => u.user).sort(), [...expected.keys()].sort(), "every user of the projection was checked");
    for (const u of drill.checkedUsers) assert.equal(u.conversationsBefore, expected.get(u.user)!.size, `conversations of ${u.user}`);
    // JUnit, read by Python's parser: one test case per user of the projection, none failed
    const okXml = parseJUnit(okJunit);
    assert.equal(okXml.suites.length, 1);
    assert.deepEqual([okXml.suites[0]!.tests, okXml.suites[0]!.failures, okXml.suites[0]!.errors], [expected.size, 0, 0]);
    assert.deepEqual(okXml.suites[0]!.cases.map((x) => x.name).sort(), [...expected.keys()].sort());
    assert.ok(okXml.suites[0]!.cases.every((x) => x.classname === `drill-rebuild.${tenant}` && x.failures.length === 0));
    assert.deepEqual([okXml.suites[0]!.properties.drillId, okXml.suites[0]!.properties.wipe, okXml.suites[0]!.properties.epochAfter], [drill.drillId, "projection", String(drill.epochBefore + 1)]);
    const audited = ok(await run(["audit", "tail", "--limit", "5"], { context: ctx.viewer! }), "audit tail").entries
      .filter((e: any) => e.rpc === "/qim.admin.v1.DrillService/RunRebuildDrill");
    assert.ok(audited.some((e: any) => e.detail.includes(drill.drillId) && e.principal === CLIENT_NAMES.drill), "the drill is audited with its id");

    // the viewer may not run a drill; bad flags exit 2 before connecting
    assert.equal(failed(await run(["drill", "rebuild", "--sample", "5", "--yes"], { context: ctx.viewer! }), 6, "viewer drill").code, "PERMISSION_DENIED");
    for (const [args, field] of [
      [["--sample", "0"], "--sample"],
      [["--sample", "5", "--user", a], "--sample"],
      [["--wipe", "everything"], "--wipe"],
      [["--user", "nope"], "--user"],
      [["--report", path.join(dir, "no-such-dir", "r.json")], "--report"],
      [["--report", path.join(dir, "r.json"), "--report-dir", dir], "--report-dir"],
      [["--report-dir", reportFile], "--report-dir"],
      [["--junit", path.join(dir, "no-such-dir", "j.xml")], "--junit"],
      [["--junit", dir], "--junit"],
    ] as const) {
      assert.equal(failed(await run(["drill", "rebuild", ...args, "--yes"], { context: ctx.drill! }), 2, args.join(" ")).field, field);
    }

    // corrupt the authority for a (g2 and g3) and for b (g3): the next drill over them must fail
    const [, g2, g3] = groups as [string, string, string];
    await removeFromAuthority(a, g2);
    await removeFromAuthority(a, g3);
    await removeFromAuthority(b, g3);

    // no --report: the report goes under $XDG_STATE_HOME/qimctl/reports, never into the working directory
    const state = path.join(dir, "state");
    const cwd = mkdtempSync(path.join(dir, "cwd-"));
    const junitFile = path.join(dir, "drill-bad.xml");
    const bad = await run(["drill", "rebuild", "--user", a, "--user", c, "--user", d, "--junit", junitFile, "--yes"], { context: ctx.drill!, cwd, env: { XDG_STATE_HOME: state } });
    assert.equal(bad.code, 4, `exit 4 expected\nstdout: ${bad.stdout}\nstderr: ${bad.stderr}`);
    const badReport = JSON.parse(bad.stdout);
    assert.equal(badReport.ok, false);
    const lostOfA = [g2, g3].sort().map((g) => [tenant, a, g, "presence", true, false]);
    assert.deepEqual(badReport.differences.map((x: any) => [x.tenant, x.user, x.conversation, x.field, x.before, x.after]), lostOfA);
    assert.equal(badReport.reportPath, path.join(state, "qimctl", "reports", `qim-drill-${badReport.drillId}.json`), "the default report directory");
    assert.deepEqual(readdirSync(cwd), [], "nothing written into the working directory");
    assert.equal(statSync(path.dirname(badReport.reportPath)).mode & 0o777, 0o700, "the reports directory it created is the user's only");
    assert.ok(existsSync(badReport.reportPath), "the report is written when the drill fails too");
    assert.equal(JSON.parse(readFileSync(badReport.reportPath, "utf8")).ok, false);
    const err = JSON.parse(bad.stderr).error;
    assert.equal(err.code, "DRILL_DIFFERENCES");
    assert.equal(err.exitCode, 4);
    assert.ok(err.message.includes(`user ${a} conversation ${g2} presence`), err.message);

    // JUnit: three test cases (a, c, d), one failed with one <failure> per conversation it lost
    const xml = parseJUnit(junitFile);
    assert.equal(xml.root, "testsuites");
    assert.deepEqual([xml.rootTests, xml.rootFailures], [3, 1]);
    assert.equal(xml.suites.length, 1);
    const suite = xml.suites[0]!;
    assert.deepEqual([suite.tests, suite.failures, suite.errors, suite.skipped], [3, 1, 0, 0]);
    assert.deepEqual(suite.cases.map((x) => x.name), [a, c, d], "one test case per user, in the order checked");
    assert.deepEqual(suite.cases.map((x) => x.failures.length), [2, 0, 0]);
    assert.deepEqual(suite.cases[0]!.failures.map((f) => [f.type, f.message]), [g2, g3].sort().map((g) => ["presence", `conversation ${g}: presence expected true, actual false`]));
    assert.ok(suite.cases[0]!.failures.every((f) => f.text.includes(`user ${a}`) && f.text.includes(`tenant ${tenant}`)));
    assert.deepEqual(
      [suite.properties.drillId, suite.properties.wipe, suite.properties.epochBefore, suite.properties.epochAfter, suite.properties.reportPath],
      [badReport.drillId, "projection", String(badReport.epochBefore), String(badReport.epochAfter), badReport.reportPath],
    );
    assert.match(suite.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/);

    // a connection from the dev stack's context file: the report goes into its data dir; --report-dir is created when missing
    const devData = path.join(dir, "devdata");
    const devCtx = path.join(dir, "context-dev.json");
    writeFileSync(devCtx, JSON.stringify({ ...JSON.parse(readFileSync(ctx.drill!, "utf8")), dev: true, dataDir: devData }));
    const devRun = ok(await run(["drill", "rebuild", "--user", c, "--yes"], { context: devCtx, cwd, env: { XDG_STATE_HOME: state } }), "drill through the dev context");
    assert.equal(devRun.reportPath, path.join(devData, `qim-drill-${devRun.drillId}.json`));
    const intoDir = ok(await run(["drill", "rebuild", "--user", d, "--report-dir", path.join(dir, "ci", "reports"), "--yes"], { context: devCtx, cwd }), "drill --report-dir");
    assert.equal(intoDir.reportPath, path.join(dir, "ci", "reports", `qim-drill-${intoDir.drillId}.json`));
    assert.ok(existsSync(intoDir.reportPath));
    assert.deepEqual(readdirSync(cwd), [], "still nothing in the working directory");

    const tableRun = await run(["drill", "rebuild", "--user", b, "--report", path.join(dir, "drill-b.json"), "--yes"], { context: ctx.admin!, json: false });
    assert.equal(tableRun.code, 4, tableRun.stderr);
    assert.match(tableRun.stdout, /1 DIFFERENCE\(S\)/);
    assert.match(tableRun.stdout, new RegExp(`${b} +${g3} +presence +true +false`));
    assert.match(tableRun.stderr, new RegExp(`^Error: drill .*user ${b} conversation ${g3} presence`));
    assert.equal(JSON.parse(readFileSync(path.join(dir, "drill-b.json"), "utf8")).differences[0].conversation, g3);

    // the drill also compares the conversation list: c's cached unread of g3 corrupted (by hand the
    // definition is 1: "a in g3" is the only message from someone else after c joined)
    const store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
    const lk = listKeys(server.runtime.keys, tenant, c);
    const g3hex = uuidToHex(parseUuid(g3, "g3"));
    const rawRow = (await store.clientFor(lk.tag).hget(lk.rows, g3hex))!;
    const fields = rawRow.split("|");
    assert.equal(fields[12], "1", "the stored unread of c in g3 before the corruption");
    fields[12] = "9";
    await store.clientFor(lk.tag).hset(lk.rows, g3hex, fields.join("|"));
    try {
      const listRun = await run(["drill", "rebuild", "--user", c, "--report", path.join(dir, "drill-c.json"), "--yes"], { context: ctx.drill! });
      assert.equal(listRun.code, 4, listRun.stderr);
      const listReport = JSON.parse(listRun.stdout);
      assert.deepEqual(listReport.differences.map((x: any) => [x.user, x.conversation, x.field, x.before, x.after]), [[c, g3, "listUnread", 9, 1]]);
      assert.equal(listReport.listRowsCompared, 1, "c has one conversation");
      const listText = await run(["drill", "rebuild", "--user", c, "--report", path.join(dir, "drill-c2.json"), "--yes"], { context: ctx.drill!, json: false });
      assert.equal(listText.code, 4, listText.stderr);
      assert.match(listText.stdout, new RegExp(`${c} +${g3} +listUnread +9 +1`));
      assert.match(listText.stdout, /conversation list: +1 rows compared with the definition \(unread, mentions, badge\): 1 mismatch\(es\)/);
    } finally {
      await store.clientFor(lk.tag).hset(lk.rows, g3hex, rawRow);
      await store.close();
    }

    // every partition is still OK afterwards
    await settled();
    ok(await run(["dispatch", "audit"], { context: ctx.viewer! }), "dispatch audit after the drills");
  });

  it("projection status counts a pending registration the server could not decode as a dead letter, and the queue moves on", async () => {
    const store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
    const keys = server.runtime.keys;
    try {
      await store.clientForKey(ucsPendingKey(keys, 7)).rpush(ucsPendingKey(keys, 7), "written|by|hand");
      let last: any;
      for (let i = 0; i < 300 && !(last?.pending[0].deadLetters === 1 && last?.pending[0].depth === 0); i++) {
        last = ok(await run(["projection", "status"], { context: ctx.viewer! }), "projection status");
      }
      assert.deepEqual(last.pending, [{ instance: 0, depth: 0, deadLetters: 1 }], "moved by the server's registration task");
      assert.deepEqual(await store.clientForKey(ucsDeadKey(keys, 7)).lrange(ucsDeadKey(keys, 7), 0, -1), ["written|by|hand"]);
      const text = await run(["projection", "status"], { context: ctx.viewer!, json: false });
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, /^INSTANCE +PENDING +DEAD LETTERS\n0 +0 +1$/m);
    } finally {
      await store.clientForKey(ucsDeadKey(keys, 7)).del(ucsDeadKey(keys, 7));
      await store.close();
    }
  });

  it("dispatch audit --junit: one test case per partition, a failure with checkpoint/low/high/lag for each partition not OK", async () => {
    await settled();
    const okFile = path.join(dir, "dispatch-ok.xml");
    ok(await run(["dispatch", "audit", "--junit", okFile], { context: ctx.viewer! }), "dispatch audit --junit");
    const good = parseJUnit(okFile).suites[0]!;
    assert.deepEqual([good.tests, good.failures], [8, 0]);
    assert.deepEqual(good.cases.map((x) => x.name), Array.from({ length: 8 }, (_, p) => `partition ${p}`));

    // two checkpoints moved beyond the high watermark behind the server's back (as a log that lost records)
    const store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
    const keys = [2, 5].map((p) => checkpointKey(server.runtime.keys, "dispatch", p));
    const saved: (string | null)[] = [];
    try {
      for (const k of keys) {
        saved.push(await store.clientForKey(k).hget(k, "pos"));
        await store.clientForKey(k).hset(k, "pos", "1000000|99999999999999-0");
      }
      const file = path.join(dir, "dispatch-bad.xml");
      const r = await run(["dispatch", "audit", "--junit", file], { context: ctx.viewer! });
      assert.equal(r.code, 4, r.stderr);
      const result = JSON.parse(r.stdout);
      const suite = parseJUnit(file).suites[0]!;
      assert.deepEqual([suite.tests, suite.failures], [8, 2]);
      assert.deepEqual(suite.cases.filter((x) => x.failures.length > 0).map((x) => x.name), ["partition 2", "partition 5"]);
      for (const p of [2, 5]) {
        const want = result.partitions[p];
        const f = suite.cases[p]!.failures;
        assert.equal(f.length, 1);
        assert.equal(f[0]!.type, "BEYOND_HIGH");
        assert.equal(f[0]!.message, `partition ${p} BEYOND_HIGH: checkpoint 1000000, low ${want.low}, high ${want.high}, lag none`);
      }
      assert.equal(suite.properties.ok, "false");
      assert.equal(failed(await run(["dispatch", "audit", "--junit", path.join(dir, "nope", "x.xml")], { context: ctx.viewer! }), 2, "unwritable --junit").field, "--junit");
    } finally {
      for (const [i, k] of keys.entries()) if (saved[i]) await store.clientForKey(k).hset(k, "pos", saved[i]!);
      await store.close();
    }
  });
});
