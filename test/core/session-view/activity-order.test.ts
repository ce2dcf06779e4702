/**
 * Issue 23, the suspected duplicate across pages. A message id (UUIDv7) is made before its
 * conversation_seq is allocated, so a later seq can carry a smaller id: two nodes sending into one
 * conversation, the node that made its id first committing second (a slow round trip, a version
 * retry). The row's last_activity_id is the head's id, so it can go DOWN; a row already paged could
 * then fall behind the cursor and be paged again (spec 002 §6.2 promises no duplicate).
 *
 * Driven through the real commit path on a real redis-server: "node A" is a second
 * ConversationService on a connection of its own; a BLPOP parked on that connection holds A's
 * commit script behind it (Redis serves one connection's commands in order), so A's message id is
 * made first and its seq allocated last, exactly as a slow node's would be. Every id and seq
 * expected below is read from what the sends returned and from the raw history, never from the list.
 */
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { ConversationService, newUuid, RedisStore, SessionDeltaApplier, uuidToHex, type Uuid } from "../../../core/index.js";
import { useList } from "../conversation-list/fixture.js";

const fx = useList("single");
let nodeA: RedisStore | null = null;
after(async () => {
  await nodeA?.close();
});

/** Polls `ok` every 20 ms, at most `tries` times (a bound on waiting, not a time assertion). */
async function until(ok: () => boolean, tries = 500): Promise<void> {
  for (let i = 0; i < tries && !ok(); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(ok(), "the expected frames did not arrive");
}

test("a later seq with a smaller message id does not page a row twice: the order key never goes down within a revision", { timeout: 120_000 }, async () => {
  const tenant = fx.tenant();
  const [user, sender] = [newUuid(), newUuid()];
  const c = fx.engine.conversations;
  const view = fx.engine.sessionView;
  nodeA = new RedisStore(fx.topology.config);
  const a = new ConversationService(nodeA, { keyPrefix: fx.engine.keys.prefix });

  const group = async () => (await c.createGroup({ tenant, owner: sender, members: [user] })).group;
  const [G, D, E1, E2, E3] = [await group(), await group(), await group(), await group(), await group()];
  const id = (r: { messageId: Uuid | null }) => uuidToHex(r.messageId!);
  for (const g of [G, E1, E2, E3]) await c.send({ tenant, group: g, sender, text: "first" });

  // node A makes x's id, then its commit waits behind the parked BLPOP; meanwhile this node
  // commits d into D and y into G: ids x < d < y, but G's seqs are y then x
  const parked = `${fx.engine.keys.prefix}:test:park:${newUuid()}`;
  const aClient = nodeA.clientFor(a.conversationKeys(tenant, G).tag);
  const park = aClient.blpop(parked, 0);
  const fromA = a.send({ tenant, group: G, sender, text: "x" });
  const d = id(await c.send({ tenant, group: D, sender, text: "d" }));
  const yr = await c.send({ tenant, group: G, sender, text: "y" });
  const y = id(yr);
  await fx.settle();

  // the walk, one row a page: G (y), then D (d) — the cursor now sits at d
  const first = await view.page(tenant, user, { limit: 1 });
  const second = await view.page(tenant, user, { limit: 1, cursor: first.nextCursor! });
  assert.deepEqual([first.rows[0]!.conversation, second.rows[0]!.conversation], [G, D]);
  const applier = new SessionDeltaApplier();
  const stop = await view.watch(tenant, user, (f) => applier.apply(f));

  await fx.store.clientFor(a.conversationKeys(tenant, G).tag).lpush(parked, "go");
  await park;
  const xr = await fromA;
  const x = id(xr);
  await fx.settle();

  // the premise, from the raw history: G's newest seq carries the smallest of the three ids
  assert.equal(xr.conversationSeq, yr.conversationSeq + 1, "x was allocated after y");
  assert.ok(x < d && d < y, `ids x ${x} < d ${d} < y ${y}`);
  const history = await c.history({ tenant, group: G, user });
  assert.deepEqual(history.records.map((r) => [r.conversationSeq, uuidToHex(r.messageId)]).slice(-2), [[yr.conversationSeq, y], [xr.conversationSeq, x]]);

  // the rest of the walk: E3, E2, E1 by hand (their ids are older than x); G never again
  const rest: Uuid[] = [];
  let cursor = second.nextCursor;
  while (cursor) {
    const p = await view.page(tenant, user, { limit: 1, cursor });
    assert.equal(p.snapshotRevision, first.snapshotRevision, "a new message is a content change: same revision (§6.3)");
    assert.equal(p.projectionComplete, true);
    rest.push(...p.rows.map((r) => r.conversation));
    cursor = p.nextCursor;
  }
  assert.deepEqual(rest, [E3, E2, E1], "no row paged twice, none missed");
  // the change reached the client as an absolute frame instead (§6.3): G at head seq x's
  await until(() => applier.rows.get(G)?.headSeq === xr.conversationSeq);
  assert.equal(applier.counts.gap, 0);
  stop();

  // a new walk of the same revision: G keeps the greatest id it has had (y), so it stays first —
  // the newest activity of G by time is y, which is what a UUIDv7 last_activity_id orders by
  const again = await view.page(tenant, user, { limit: 10 });
  assert.equal(again.snapshotRevision, first.snapshotRevision);
  assert.deepEqual(again.rows.map((r) => r.conversation), [G, D, E3, E2, E1]);
});
