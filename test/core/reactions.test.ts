/**
 * core/reactions (issue 28) on a 3-master Redis Cluster: the executor's keys share the
 * conversation's slot. Concurrent REACTs of one user and key, and of many users, against an
 * independent count: the raw who hash read after the storm and the answers the calls got
 * (summary_version = the number of calls that answered changed; each key's count = its marks in
 * the who hash). Hostile keys are refused before anything is written; the summaries come back for
 * the seqs asked; a history trim takes the reactions below its floor.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { conversationKeys, InvalidArgumentError, newUuid, Reactions, reactionWhoKey, type Uuid } from "../../core/index.js";
import { useEngine } from "./fixture.js";

describe("core/reactions on a Redis Cluster", { timeout: 120_000 }, () => {
  const fx = useEngine("cluster");

  const setUp = async (members = 60) => {
    const tenant = fx.tenant();
    const owner = newUuid();
    const users = Array.from({ length: members }, () => newUuid());
    const g = await fx.engine.createGroup({ tenant, owner, members: users });
    const group = g.group as Uuid;
    const reactions = new Reactions(fx.store, fx.engine.keys);
    const seqs: number[] = [];
    for (let i = 0; i < 3; i++) seqs.push((await fx.engine.send({ tenant, group, sender: owner, text: `m${i}` })).conversationSeq);
    return { tenant, group, owner, users, reactions, seqs };
  };

  it("concurrent REACTs: each (user, key) counts once, the version counts the changes, the counts are the who hash's marks", async () => {
    const { tenant, group, users, reactions } = await setUp();
    const [same, ...others] = users as [Uuid, ...Uuid[]];
    // 40 adds of one (user, key) and one add each of 40 other users, all at once; then 30 add/remove toggles of a third key by one user
    const calls = [
      ...Array.from({ length: 40 }, () => () => reactions.react({ tenant, group, seq: 1, user: same, key: "👍" })),
      ...others.slice(0, 40).map((user) => () => reactions.react({ tenant, group, seq: 1, user, key: "👍" })),
      ...Array.from({ length: 30 }, (_, i) => () => reactions.react({ tenant, group, seq: 1, user: others[41]!, key: "toggle", remove: i % 2 === 1 })),
    ];
    const answers = await Promise.all(calls.map((c) => c()));
    const changes = answers.filter((a) => a.changed).length;
    // the raw who hash, read by the test
    const client = fx.store.clientFor(conversationKeys(fx.engine.keys, tenant, group).tag);
    const who = await client.hgetall(reactionWhoKey(fx.engine.keys, tenant, group, 1));
    const marks = (key: string) => Object.keys(who).filter((f) => f.endsWith(`\t${key}`)).length;
    const s = (await reactions.summary(tenant, group, 1))!;
    assert.equal(marks("👍"), 41, "one mark for the repeated user, one for each of 40 others");
    assert.deepEqual(s.counts.find((c) => c.key === "👍")?.count, 41);
    assert.equal(s.counts.find((c) => c.key === "toggle")?.count ?? 0, marks("toggle"));
    assert.equal(s.version, changes, "one version per change, none per repeat");
    assert.equal(answers.slice(0, 40).filter((a) => a.changed).length, 1, "the repeated add changed once");
    // the largest version any answer carried is the summary's
    assert.equal(Math.max(...answers.map((a) => a.summary.version)), s.version);
    assert.equal(s.detailRows, Object.values(who).filter((v) => v !== "").length);
  });

  it("hostile keys are refused with nothing written; a 64-byte key and an emoji sequence are fine", async () => {
    const { tenant, group, users, reactions } = await setUp(3);
    const user = users[0]!;
    for (const key of ["", "two words", "tab\there", "new\nline", "x".repeat(65), "\ud800", "\u0000", "del\u007f", "c1\u0085", "rtl\u202etxet", "iso\u2067x"]) {
      await assert.rejects(reactions.react({ tenant, group, seq: 1, user, key }), (err: unknown) => err instanceof InvalidArgumentError && (err as InvalidArgumentError).field === "reaction_key", JSON.stringify(key));
    }
    assert.equal(await reactions.summary(tenant, group, 1), null, "nothing written");
    for (const key of ["x".repeat(64), "👩‍👩‍👧‍👦", "🇯🇵", "thumbs_up"]) assert.equal((await reactions.react({ tenant, group, seq: 1, user, key })).changed, true, key);
    await assert.rejects(reactions.react({ tenant, group, seq: 0, user, key: "x" }), InvalidArgumentError);
  });

  it("summaries come back for the seqs asked; who pages; a history trim takes the reactions below its floor", async () => {
    const { tenant, group, users, reactions, seqs } = await setUp(5);
    const [a, b] = users as [Uuid, Uuid];
    await reactions.react({ tenant, group, seq: seqs[0]!, user: a, key: "x" });
    await reactions.react({ tenant, group, seq: seqs[2]!, user: a, key: "y" });
    await reactions.react({ tenant, group, seq: seqs[2]!, user: b, key: "y" });
    const got = await reactions.summaries(tenant, group, seqs);
    assert.deepEqual([...got.keys()].sort(), [seqs[0], seqs[2]]);
    assert.deepEqual(got.get(seqs[2]!)!.counts, [{ key: "y", count: 2 }]);
    const page = await reactions.who(tenant, group, seqs[2]!, { limit: 1 });
    const all = [...page.rows];
    for (let cursor = page.nextCursor; cursor !== "";) {
      const next = await reactions.who(tenant, group, seqs[2]!, { cursor, limit: 1 });
      all.push(...next.rows);
      cursor = next.nextCursor;
    }
    assert.deepEqual([...new Set(all.map((r) => `${r.user}/${r.key}`))].sort(), [`${a}/y`, `${b}/y`].sort());
    await assert.rejects(reactions.who(tenant, group, seqs[2]!, { limit: 1001 }), InvalidArgumentError);
    // a trim whose floor is the third message: the first's reactions go, the third's stay
    assert.equal(await reactions.trimBelow(tenant, group, seqs[2]!), 1);
    assert.deepEqual([...(await reactions.summaries(tenant, group, seqs)).keys()], [seqs[2]]);
    const client = fx.store.clientFor(conversationKeys(fx.engine.keys, tenant, group).tag);
    assert.equal(await client.exists(reactionWhoKey(fx.engine.keys, tenant, group, seqs[0]!)), 0);
    assert.equal(await reactions.trimBelow(tenant, group, seqs[2]!), 0, "again: nothing left below");
  });
});
