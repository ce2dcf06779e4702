/**
 * `qimctl user groups` through the real CLI against the real admin server over mTLS on a real
 * redis-server: a user added to three groups and removed from one shows three rows with the
 * states and intervals the operations imply (each expected seq counted here from the records the
 * test wrote, then checked against what the commands answered); the listing survives a lost
 * projection (the authority has the set too); paging by group id; a group joined at creation shows
 * once it has a message.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { parseUuid } from "../../core/index.js";
import type { TestPkiName } from "../certs/fixture.js";
import { failed, ok, run, startE2eServer, type E2eServer, writeContext } from "./qimctl.js";

describe("qimctl user groups against the real server", { timeout: 180_000 }, () => {
  let dir: string;
  let e2e: E2eServer;
  const tenant = randomUUID();
  const ctx: Partial<Record<TestPkiName, string>> = {};
  const owner = randomUUID();
  const other = randomUUID();
  const user = randomUUID();

  /** Expected rows, by group: computed from the operations below, never read back from the server. */
  const expected = new Map<string, { state: string; joinedAt: number; leftAt: number | null }>();
  /** Records (messages and membership events) written to each group: the next one takes seq count + 1. */
  const records = new Map<string, number>();
  const next = (group: string) => {
    const seq = (records.get(group) ?? 0) + 1;
    records.set(group, seq);
    return seq;
  };

  const contextFor = (who: TestPkiName): string => writeContext(e2e, dir, tenant, who);

  const create = async (members: string[]) => ok(await run(["group", "create", "--owner", owner, ...members.flatMap((m) => ["--member", m])], { context: ctx.operator! }), "group create").group as string;
  const send = async (group: string) => {
    const seq = next(group);
    assert.equal(ok(await run(["message", "send", "--group", group, "--as", owner, "--text", `m${seq}`], { context: ctx.drill! }), "message send").conversationSeq, seq);
  };
  const change = async (op: "add" | "remove", group: string) => {
    const seq = next(group);
    assert.equal(ok(await run(["membership", op, "--group", group, "--user", user, ...(op === "remove" ? ["--yes"] : [])], { context: ctx.operator! }), `membership ${op}`).eventConversationSeq, seq);
    return seq;
  };

  /** `user groups` until it lists `rows` groups (the join reaches the projection asynchronously), bounded by attempts. */
  const listed = async (rows: number, context = ctx.viewer!) => {
    let last: any;
    for (let i = 0; i < 100; i++) {
      last = ok(await run(["user", "groups", "--user", user], { context }), "user groups");
      if (last.groups.length >= rows) return last;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.fail(`user groups did not list ${rows} groups: ${JSON.stringify(last)}`);
  };

  const expectedRows = () => [...expected].map(([group, e]) => ({ group, ...e })).sort((x, y) => (x.group < y.group ? -1 : 1));

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-user-groups-"));
    e2e = await startE2eServer(dir);
    for (const who of ["operator", "viewer", "drill"] as const) ctx[who] = contextFor(who);
  });

  after(async () => {
    await e2e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("added to three groups, removed from one: three rows with their states and intervals", async () => {
    // a: the join is the group's first record (seq 1), so the user sees from seq 1: joined_at 0
    const a = await create([other]);
    const joinA = await change("add", a);
    expected.set(a, { state: "ACTIVE", joinedAt: joinA - 1, leftAt: null });
    // b: two messages before the join (seqs 1, 2), the join takes seq 3: joined_at 2
    const b = await create([other]);
    await send(b);
    await send(b);
    const joinB = await change("add", b);
    expected.set(b, { state: "ACTIVE", joinedAt: joinB - 1, leftAt: null });
    // c: join (seq 1), a message (seq 2), removal (seq 3): joined_at 0, left_at 3, REMOVED
    const c = await create([other]);
    const joinC = await change("add", c);
    await send(c);
    const removeC = await change("remove", c);
    expected.set(c, { state: "REMOVED", joinedAt: joinC - 1, leftAt: removeC });
    assert.deepEqual([joinA - 1, joinB - 1, joinC - 1, removeC], [0, 2, 0, 3], "the intervals the operations imply");
    // a group the user was never in, with traffic: never listed
    const never = await create([other]);
    await send(never);

    const r = await listed(3);
    assert.equal(r.tenant, tenant);
    assert.equal(r.user, user);
    assert.deepEqual(r.groups, expectedRows());
    assert.equal(r.conversations, 3);

    const text = await run(["user", "groups", "--user", user], { context: ctx.viewer!, json: false });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^User \S+: member of 2 group\(s\), 1 left or removed\nGROUP +STATE +JOINED AT +LEFT AT\n/);
    assert.match(text.stdout, new RegExp(`${c} +REMOVED +0 +3`));
    assert.match(text.stdout, new RegExp(`${b} +ACTIVE +2 +-`));
  });

  it("a lost projection hides nothing: the authority has the user's set too", async () => {
    // wait until the registrations reached the authority (nothing pending), then lose the projection
    for (let i = 0; ; i++) {
      const s = ok(await run(["projection", "status"], { context: ctx.viewer! }), "projection status");
      if (s.pending.every((p: any) => p.depth === 0)) break;
      assert.ok(i < 100, `registrations still pending: ${JSON.stringify(s.pending)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await e2e.server.runtime.projection.sessions.wipeUser(parseUuid(tenant, "tenant"), parseUuid(user, "user"));
    assert.deepEqual(ok(await run(["user", "groups", "--user", user], { context: ctx.viewer! }), "user groups after the wipe").groups, expectedRows());
  });

  it("a group the user joined at its creation shows once it has a message", async () => {
    const d = await create([user]);
    const before = ok(await run(["user", "groups", "--user", user], { context: ctx.viewer! }), "user groups");
    assert.ok(!before.groups.some((g: any) => g.group === d), "creation writes no control message: not in the user's conversations yet");
    await send(d);
    expected.set(d, { state: "ACTIVE", joinedAt: 0, leftAt: null });
    assert.deepEqual((await listed(4)).groups, expectedRows());
  });

  it("pages by group id: every group exactly once", async () => {
    const sessions = e2e.server.runtime.projection.sessions;
    const seen: string[] = [];
    let after: string | undefined;
    for (let pages = 1; ; pages++) {
      const page = await sessions.userGroups({ tenant, user, limit: 3, ...(after ? { after } : {}) });
      seen.push(...page.groups.map((g) => g.group));
      if (page.nextAfter === null) {
        assert.equal(pages, 2, "4 groups in pages of 3");
        break;
      }
      after = page.nextAfter;
    }
    assert.deepEqual(seen, expectedRows().map((g) => g.group));
  });

  it("bad input is refused naming the flag, before connecting", async () => {
    assert.equal(failed(await run(["user", "groups", "--user", "nope"], { context: ctx.viewer! }), 2, "bad --user").field, "--user");
    assert.equal(failed(await run(["user", "groups", "--user", user, "--tenant", "t"], { context: ctx.viewer! }), 2, "bad --tenant").field, "--tenant");
    assert.equal(failed(await run(["user", "groups"], { context: ctx.viewer! }), 2, "no --user").field, "--user");
  });
});
