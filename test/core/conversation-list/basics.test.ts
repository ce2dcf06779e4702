import assert from "node:assert/strict";
import { test } from "node:test";
import { newUuid } from "../../../core/index.js";
import { useList } from "./fixture.js";

const fx = useList("single");

test("rows: unread and mentions from delivered messages, read, clear, delete and revive", async () => {
  const tenant = fx.tenant();
  const [owner, u] = [newUuid(), newUuid()];
  const c = fx.engine.conversations;
  const { group } = await c.createGroup({ tenant, owner, members: [u] });
  await c.send({ tenant, group, sender: owner, text: "1" });
  await c.send({ tenant, group, sender: owner, text: "2", mentions: [u] });
  await c.send({ tenant, group, sender: u, text: "3" });
  await c.send({ tenant, group, sender: owner, text: "4" });
  await fx.settle();
  const list = fx.engine.conversationList.service;
  let row = await list.row(tenant, u, group);
  assert.ok(row);
  // by hand: seqs 1,2,4 are the owner's (counted), 3 is u's own; 2 mentions u
  assert.equal(row.unread, 3);
  assert.equal(row.mentions, 1);
  assert.equal(row.mentionFirstSeq, 2);
  assert.equal(row.lastActivitySeq, 4);
  assert.deepEqual(await list.badge(tenant, u), { totalUnread: 3, totalMention: 1, mutedUnread: 0, version: row.version });

  await c.markRead({ tenant, group, user: u, seq: 2 });
  row = await list.row(tenant, u, group);
  assert.equal(row?.unread, 1);
  assert.equal(row?.mentions, 0);
  assert.equal(row?.mentionFirstSeq, null);

  row = await list.clear(tenant, u, group);
  assert.equal(row.unread, 0);
  assert.equal(row.hiddenBeforeSeq, 4);
  assert.equal(row.deleted, false);
  assert.equal((await list.rows(tenant, u)).length, 1);

  await c.send({ tenant, group, sender: owner, text: "5" });
  await fx.settle();
  row = await list.delete(tenant, u, group);
  assert.equal(row.deleted, true);
  assert.equal(row.deletedBeforeSeq, 5);
  assert.equal((await list.rows(tenant, u)).length, 0);
  assert.equal((await list.badge(tenant, u)).totalUnread, 0);

  await c.send({ tenant, group, sender: owner, text: "6" });
  await fx.settle();
  row = await list.row(tenant, u, group);
  assert.equal(row?.deleted, false);
  assert.equal(row?.unread, 1);
  assert.equal(row?.deletedBeforeSeq, 5);
  assert.equal((await list.badge(tenant, u)).totalUnread, 1);
});
