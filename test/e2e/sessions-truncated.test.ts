/**
 * Issue 23, defect 6, through the real CLI against the real admin server (mTLS, real redis-server):
 * a user in more conversations than max_conversations_per_user. `sessions --all` used to take the
 * cut snapshot for a stale cursor on every page and exit 4; now it returns exactly the first 5,000
 * in the list's order and says it is truncated (a JSON field, a line in the table), while a cursor
 * of an older revision is still answered as "start again" (projectionComplete false).
 *
 * The conversations are made through the server's own engine (createGroup, send: the real commit
 * path, dispatch log and list consumer); the expected 5,000 are computed here from the message ids
 * the sends returned (last_activity_id DESC, conversation_id ASC, spec 002 §6.1), never read back
 * from the list.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { MAX_CONVERSATIONS_PER_USER, newUuid, parseUuid, uuidToHex, type Uuid } from "../../core/index.js";
import { ok, run, startE2eServer, type E2eServer } from "./qimctl.js";

/** One more conversation than the bound: the oldest one is beyond the cut. */
const CONVERSATIONS = MAX_CONVERSATIONS_PER_USER + 1;
/** Rows per page of --all (session_list_page_limit, spec 002 §2.2). */
const PAGE = 200;
/** The JSON of 5,000 summaries is several MiB; the walk is 26 pages. */
const BIG_OUTPUT = { maxBuffer: 64 * 1024 * 1024, timeoutMs: 180_000 };

async function inBatches<T>(n: number, size: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < n; i += size) out.push(...(await Promise.all(Array.from({ length: Math.min(size, n - i) }, (_, k) => fn(i + k)))));
  return out;
}

describe("qimctl sessions --all for a user over max_conversations_per_user", { timeout: 900_000 }, () => {
  let dir: string;
  let e2e: E2eServer;
  const tenant = randomUUID();
  const owner = newUuid();
  const user = newUuid();
  let viewer = "";
  let operator = "";
  /** The first MAX_CONVERSATIONS_PER_USER groups in the spec's order, and the one beyond the cut. */
  let expected: Uuid[] = [];
  let beyond: Uuid;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-sessions-cut-"));
    e2e = await startE2eServer(dir);
    const contextFor = (who: "viewer" | "operator") => {
      const file = path.join(dir, `context-${who}.json`);
      writeFileSync(file, JSON.stringify({ endpoint: e2e.endpoint, ca: e2e.pki.ca.certPath, tenant, cert: e2e.pki[who].certPath, key: e2e.pki[who].keyPath }));
      return file;
    };
    viewer = contextFor("viewer");
    operator = contextFor("operator");
    const c = e2e.server.runtime.conversations;
    const t = parseUuid(tenant, "tenant");
    const groups = await inBatches(CONVERSATIONS, 100, async () => (await c.createGroup({ tenant: t, owner, members: [user] })).group);
    const heads = new Map<Uuid, string>();
    await inBatches(CONVERSATIONS, 100, async (i) => {
      const r = await c.send({ tenant: t, group: groups[i]!, sender: owner, text: `m${i}` });
      heads.set(groups[i]!, uuidToHex(r.messageId!));
    });
    const order = [...groups].sort((a, b) => (heads.get(a)! !== heads.get(b)! ? (heads.get(a)! < heads.get(b)! ? 1 : -1) : a < b ? -1 : 1));
    expected = order.slice(0, MAX_CONVERSATIONS_PER_USER);
    beyond = order[MAX_CONVERSATIONS_PER_USER]!;
    // every row stored before the first page loads the snapshot (the list consumer runs in the background)
    const list = e2e.server.runtime.conversationList.service;
    for (let i = 0; i < 600; i++) {
      const rows = await list.rows(tenant, user);
      if (rows.length === CONVERSATIONS && rows.every((r) => r.lastActivityId === heads.get(r.conversation))) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal((await list.rows(tenant, user)).length, CONVERSATIONS, "the list consumer stored every row");
  });

  after(async () => {
    await e2e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("--all returns exactly the first 5,000, once each, in order, with snapshotTruncated; exit 0", async () => {
    const all = ok(await run(["sessions", "--user", user, "--all", "--limit", String(PAGE)], { context: viewer, ...BIG_OUTPUT }), "sessions --all");
    const got: string[] = all.summaries.map((s: { group: string }) => s.group);
    assert.equal(got.length, MAX_CONVERSATIONS_PER_USER);
    assert.equal(new Set(got).size, MAX_CONVERSATIONS_PER_USER, "no duplicate");
    assert.deepEqual(got, expected);
    assert.ok(!got.includes(beyond), "the oldest conversation is beyond the cut");
    assert.deepEqual([all.snapshotTruncated, all.maxConversationsPerUser, all.projectionComplete, all.nextCursor, all.total], [true, MAX_CONVERSATIONS_PER_USER, true, null, MAX_CONVERSATIONS_PER_USER]);
  });

  it("the table says the list is truncated; a single page says so in JSON", async () => {
    const text = await run(["sessions", "--user", user, "--limit", "1"], { context: viewer, json: false });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`^truncated: the user has more than ${MAX_CONVERSATIONS_PER_USER} conversations`, "m"));
    assert.doesNotMatch(text.stdout, /the list changed shape/);
    const page = ok(await run(["sessions", "--user", user, "--limit", "1"], { context: viewer }), "page 1");
    assert.deepEqual([page.snapshotTruncated, page.projectionComplete], [true, true]);
    assert.deepEqual(page.summaries.map((s: { group: string }) => s.group), [expected[0]]);
  });

  it("a cursor of an older revision is still 'start again' (projectionComplete false), the cut still stated", async () => {
    const p1 = ok(await run(["sessions", "--user", user, "--limit", String(PAGE)], { context: viewer }), "page 1");
    const pinned = expected[4000]!;
    ok(await run(["conversation", "pin", "--group", pinned, "--as", user, "--rank", "0"], { context: operator }), "pin");
    const next = ok(await run(["sessions", "--user", user, "--limit", String(PAGE), "--cursor", p1.nextCursor], { context: viewer }), "page after the pin");
    assert.equal(next.projectionComplete, false);
    assert.ok(next.snapshotRevision > p1.snapshotRevision, `revision ${next.snapshotRevision} after ${p1.snapshotRevision}`);
    assert.equal(next.snapshotTruncated, true);
    assert.equal(next.summaries[0].group, pinned, "the new revision's first page starts with the pinned conversation");
  });
});
