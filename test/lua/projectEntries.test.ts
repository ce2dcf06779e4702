/**
 * lua/projectEntries-n.lua: per entry, ZADD GT the conversation into the user's `convs`; when
 * the member was absent, RPUSH the pending registration onto the user bucket's `ucs_pending`
 * in the same step. Returns the number of entries registered.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { encodeRegistration } from "../../core/index.js";
import { uuidToHex } from "../../core/index.js";
import { KeySpace, type UserKeys } from "../../core/index.js";
import { callScript, type RedisClient } from "../../core/index.js";
import { dumpKeys } from "../harness/dump.js";
import { keyPrefix, usersInOneBucket, useRedis } from "./helpers.js";
import { userKeys } from "../../core/index.js";
import { newUuid } from "../../core/index.js";
import type { Uuid } from "../../core/index.js";

const fx = useRedis();

const T0 = 1_700_000_000_000;

interface Entry {
  keys: UserKeys;
  conversation: Uuid;
  createdAt: number;
  /** The pending item the entry would queue. */
  item: string;
}

/** One session space per test: a fresh prefix and tenant. */
class Space {
  readonly ks = new KeySpace(keyPrefix());
  readonly tenant = newUuid();

  entry(user: Uuid, conversation: Uuid, createdAt: number): Entry {
    return {
      keys: userKeys(this.ks, this.tenant, user),
      conversation,
      createdAt,
      item: encodeRegistration({ tenant: this.tenant, user, conversation, kind: "group", firstSeenAt: createdAt }),
    };
  }

  client(uk: UserKeys): RedisClient {
    return fx.store.clientFor(uk.tag);
  }
}

/** One projectEntries call with the entries in order (keys and args as the header lists them). */
async function project(client: RedisClient, entries: Entry[]): Promise<number> {
  const keys: string[] = [];
  const args: string[] = [];
  for (const e of entries) {
    keys.push(e.keys.convs, e.keys.ucsPending);
    args.push(uuidToHex(e.conversation), String(e.createdAt), e.item);
  }
  const reply = await callScript(client, "projectEntries", keys, args);
  assert.equal(reply.length, 1);
  return Number(reply[0]);
}

async function zrange(client: RedisClient, key: string): Promise<[string, number][]> {
  const flat = await client.zrange(key, "0", "-1", "WITHSCORES");
  const out: [string, number][] = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i]!, Number(flat[i + 1])]);
  return out;
}

function userKeyList(...uks: UserKeys[]): string[] {
  return [...new Set(uks.flatMap((k) => [k.convs, k.ucsPending]))];
}

test("projectEntries: a new member is added and its registration queued once (returns 1)", async () => {
  const s = new Space();
  const user = newUuid();
  const conv = newUuid();
  const e = s.entry(user, conv, T0);
  const c = s.client(e.keys);

  assert.equal(await project(c, [e]), 1);
  assert.deepEqual(await zrange(c, e.keys.convs), [[uuidToHex(conv), T0]]);
  assert.deepEqual(await c.lrange(e.keys.ucsPending, 0, -1), [e.item]);
  assert.equal(e.item, `${uuidToHex(s.tenant)}|${uuidToHex(user)}|${uuidToHex(conv)}|group|${T0}`);
});

test("projectEntries: an existing member with a higher score moves up and nothing is queued (returns 0)", async () => {
  const s = new Space();
  const user = newUuid();
  const conv = newUuid();
  const first = s.entry(user, conv, T0);
  const c = s.client(first.keys);
  assert.equal(await project(c, [first]), 1);

  assert.equal(await project(c, [s.entry(user, conv, T0 + 500)]), 0);
  assert.deepEqual(await zrange(c, first.keys.convs), [[uuidToHex(conv), T0 + 500]]);
  assert.deepEqual(await c.lrange(first.keys.ucsPending, 0, -1), [first.item]);
});

test("projectEntries: a lower or equal score changes nothing (GT) and nothing is queued", async () => {
  const s = new Space();
  const user = newUuid();
  const conv = newUuid();
  const first = s.entry(user, conv, T0);
  const c = s.client(first.keys);
  assert.equal(await project(c, [first]), 1);

  const before = await dumpKeys(c, userKeyList(first.keys));
  assert.equal(await project(c, [s.entry(user, conv, T0 - 500)]), 0);
  assert.equal(await project(c, [s.entry(user, conv, T0)]), 0);
  assert.equal(await dumpKeys(c, userKeyList(first.keys)), before);
  assert.deepEqual(await zrange(c, first.keys.convs), [[uuidToHex(conv), T0]]);
  assert.deepEqual(await c.lrange(first.keys.ucsPending, 0, -1), [first.item]);
});

test("projectEntries: several users and conversations in one call, mixed new and existing: exact count, queue in entry order", async () => {
  const s = new Space();
  const [u1, u2] = usersInOneBucket(s.tenant, 2) as [Uuid, Uuid];
  const [a, b, d] = [newUuid(), newUuid(), newUuid()];
  const seed = s.entry(u1, a, T0);
  const c = s.client(seed.keys);
  assert.equal(userKeys(s.ks, s.tenant, u2).ucsPending, seed.keys.ucsPending, "one pending queue for both users");
  assert.equal(await project(c, [seed]), 1);

  const batch = [
    s.entry(u1, a, T0 + 10), // existing: score moves up, not queued
    s.entry(u1, b, T0 + 20), // new
    s.entry(u2, a, T0 + 30), // new (a is u1's, not u2's)
    s.entry(u2, d, T0 + 40), // new
    s.entry(u1, d, T0 + 5), // new
  ];
  assert.equal(await project(c, batch), 4);
  assert.deepEqual(await c.lrange(seed.keys.ucsPending, 0, -1), [seed.item, batch[1]!.item, batch[2]!.item, batch[3]!.item, batch[4]!.item]);
  assert.deepEqual(
    await zrange(c, seed.keys.convs),
    [
      [uuidToHex(d), T0 + 5],
      [uuidToHex(a), T0 + 10],
      [uuidToHex(b), T0 + 20],
    ],
  );
  assert.deepEqual(await zrange(c, userKeys(s.ks, s.tenant, u2).convs), [
    [uuidToHex(a), T0 + 30],
    [uuidToHex(d), T0 + 40],
  ]);

  // the same batch again: all existing, nothing queued, nothing changed
  const before = await dumpKeys(c, userKeyList(seed.keys, userKeys(s.ks, s.tenant, u2)));
  assert.equal(await project(c, batch), 0);
  assert.equal(await dumpKeys(c, userKeyList(seed.keys, userKeys(s.ks, s.tenant, u2))), before);
});

test("projectEntries: the same conversation twice in one call is registered once, with the first entry's item", async () => {
  const s = new Space();
  const user = newUuid();

  // older first, newer second: the score ends at the newer one
  const conv = newUuid();
  const older = s.entry(user, conv, T0);
  const newer = s.entry(user, conv, T0 + 100);
  const c = s.client(older.keys);
  assert.equal(await project(c, [older, newer]), 1);
  assert.deepEqual(await zrange(c, older.keys.convs), [[uuidToHex(conv), T0 + 100]]);
  assert.deepEqual(await c.lrange(older.keys.ucsPending, 0, -1), [older.item]);

  // newer first, older second (out of order): the score stays at the newer one
  const conv2 = newUuid();
  const newer2 = s.entry(user, conv2, T0 + 300);
  const older2 = s.entry(user, conv2, T0 + 200);
  assert.equal(await project(c, [newer2, older2]), 1);
  assert.deepEqual(await zrange(c, older.keys.convs), [
    [uuidToHex(conv), T0 + 100],
    [uuidToHex(conv2), T0 + 300],
  ]);
  assert.deepEqual(await c.lrange(older.keys.ucsPending, 0, -1), [older.item, newer2.item]);
});

test("projectEntries: keys of two user buckets in one call on a single instance", async () => {
  const s = new Space();
  const u1 = newUuid();
  let u2 = newUuid();
  while (userKeys(s.ks, s.tenant, u2).bucket === userKeys(s.ks, s.tenant, u1).bucket) u2 = newUuid();
  const conv = newUuid();
  const e1 = s.entry(u1, conv, T0);
  const e2 = s.entry(u2, conv, T0 + 1);
  assert.notEqual(e1.keys.tag, e2.keys.tag);
  assert.notEqual(e1.keys.ucsPending, e2.keys.ucsPending);
  const c = s.client(e1.keys);
  assert.equal(s.client(e2.keys), c, "one instance holds both buckets");

  assert.equal(await project(c, [e1, e2]), 2);
  assert.deepEqual(await c.lrange(e1.keys.ucsPending, 0, -1), [e1.item]);
  assert.deepEqual(await c.lrange(e2.keys.ucsPending, 0, -1), [e2.item]);
  assert.deepEqual(await zrange(c, e1.keys.convs), [[uuidToHex(conv), T0]]);
  assert.deepEqual(await zrange(c, e2.keys.convs), [[uuidToHex(conv), T0 + 1]]);
});

test("projectEntries: a call with no entries returns 0", async () => {
  const s = new Space();
  assert.equal(await project(fx.store.clientFor(userKeys(s.ks, s.tenant, newUuid()).tag), []), 0);
});
