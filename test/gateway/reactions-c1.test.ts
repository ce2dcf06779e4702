/**
 * Spec 003 C-1 (issue 28), with the spec's numbers, on a real node process over TLS: a group of
 * 100,000 members (filled through the real add path, 100 calls of 1,000), one message, and 5,000 of
 * its members react once each through the admin API's React (the support path: the same executor
 * as the gateway's REACT, without needing 5,000 tokens). Eight members and two non-members are
 * online with real device connections.
 *
 * What the spec asks, and how each is checked independently of the code under test:
 * - 0 new mailbox/list entries and 0 changes to any member's unread, badge or order: Redis's own
 *   keyspace notifications name every key written while the reactions run; none but the message's
 *   reaction keys (rxsum, rxwho) and the node's background keys (those it wrote in a quiet window
 *   of the same length before) was written — no history, outbox, unread index, list row, badge or
 *   projection key of anyone.
 * - 0 pushes: the online devices got no MESSAGE, SESSION_DELTA or BADGE_UPDATE during the storm.
 * - REACTION_UPDATE only to online members: each of the 8 members' devices got some; the two
 *   non-members' devices none.
 * - ≤ 1 frame per seq per merge window per connection: consecutive REACTION_UPDATEs of a device
 *   arrive at least the window apart (less 10 % for delivery jitter), and each device's last frame
 *   carries the final counts, worked out here from the keys the test chose (user i reacts with
 *   KEYS[i % 3]) and version 5,000 (one change per reaction).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { Redis } from "ioredis";
import { connectAdmin, type AdminClient } from "../../admin-api/client.js";
import { newUuid, parseUuid, REACTION_PUSH_MERGE_WINDOW_MS, type Uuid } from "../../core/index.js";
import { eachLimited } from "../../core/support/index.js";
import { Frame } from "../../admin-api/gen/qim/client/v1/frames.js";
import { Device, show, startGatewayNode, type GatewayNode } from "./device.js";

const MEMBERS = 100_000;
const REACTORS = 5_000;
const PER_CALL = 1000;
const ONLINE_MEMBERS = 8;
const KEYS = ["👍", "❤️", "party"];

describe("spec 003 C-1: 5,000 reactions to one message of a 100,000-member group", { timeout: 900_000 }, () => {
  let node: GatewayNode;
  let op: AdminClient;
  let watcher: Redis;

  before(async () => {
    node = await startGatewayNode("qim-c1-");
    op = connectAdmin({
      endpoint: node.server.endpoint, caPem: readFileSync(node.pki.ca.certPath, "utf8"), certPem: readFileSync(node.pki.admin.certPath, "utf8"),
      keyPem: readFileSync(node.pki.admin.keyPath, "utf8"), deadlineMs: 60_000,
    });
    watcher = new Redis({ host: node.redis.host, port: node.redis.port, lazyConnect: true });
    await watcher.connect();
  });
  after(async () => {
    watcher?.disconnect();
    op?.close();
    await node?.stop();
  });

  it("0 mailbox, list, unread, badge or order writes; REACTION_UPDATE only to online members, at most one per window, ending at the final counts", async () => {
    const tenant = node.tenant;
    const owner = newUuid();
    const group = parseUuid((await op.createGroup({ tenant, group: "", owner, members: [] })).group, "group");
    const members: Uuid[] = [owner];
    while (members.length < MEMBERS) {
      const batch = Array.from({ length: Math.min(PER_CALL, MEMBERS - members.length) }, () => newUuid());
      assert.equal((await op.addMembers({ tenant, group, users: batch, dryRun: false })).outcome, "committed");
      members.push(...batch);
    }
    const sent = await op.sendMessage({ tenant, group, sender: owner, text: "react to me", clientMessageId: "", mentions: [] });
    const seq = sent.conversationSeq;

    const connect = async (user: Uuid, name: string) => {
      const { token } = await op.issueToken({ tenant, user, device: name, ttlMs: 3_600_000n, dryRun: false });
      const d = await Device.open(node.url, node.ca, token);
      assert.ok(d instanceof Device, `connected: ${show(d)}`);
      const a = await d.request({ $case: "auth", auth: { deviceId: name, clientVersion: "c1" } });
      assert.equal(a.body?.$case, "authOk", show(a.body));
      return d;
    };
    // online: 8 members (4 of them among the reactors) and 2 users of the tenant in no group
    const online = await Promise.all(members.slice(REACTORS - 4, REACTORS - 4 + ONLINE_MEMBERS).map((u, i) => connect(u, `c1-m${i}`)));
    const outsiders = await Promise.all([newUuid(), newUuid()].map((u, i) => connect(u, `c1-x${i}`)));
    // the devices PING as real ones do: the fanout's settling and the storm can outlast GATEWAY_IDLE_TIMEOUT_MS (90 s) of silence
    const keepalive = setInterval(() => {
      for (const d of [...online, ...outsiders]) void d.request({ $case: "ping", ping: {} }).catch(() => undefined);
    }, 20_000);
    keepalive.unref();
    // every key written, by Redis's own account
    const written = new Set<string>();
    const sub = new Redis({ host: node.redis.host, port: node.redis.port });
    await watcher.config("SET", "notify-keyspace-events", "KA");
    await sub.psubscribe("__keyspace@0__:*");
    sub.on("pmessage", (_p, channel: string) => written.add(channel.slice("__keyspace@0__:".length)));
    // the send's fanout to 100,000 lists runs on: wait until two whole windows in a row pass with no
    // list, projection or history key written (one quiet window was once a pause of the fanout on a
    // slow machine, its lists written during the storm); a hang guard of 10 minutes, not a time asserted
    const window = REACTION_PUSH_MERGE_WINDOW_MS + 1000;
    const busy = /:(clrows|clbadge|clversion|clprefs|clckpt|convs|hist|outbox|vpending|unreadidx|commits|fanout)(:|$)/;
    for (let i = 0, quiet = 0; ; i++) {
      assert.ok(i < 600_000 / window, "the send's fanout settled");
      written.clear();
      await new Promise((r) => setTimeout(r, window));
      const still = [...written].filter((k) => busy.test(k));
      quiet = still.length === 0 ? quiet + 1 : 0;
      if (quiet === 2) break;
      if (process.env.QIM_C1_DEBUG) console.log(`# still busy: ${still.length} keys, e.g. ${[...new Set(still.map((k) => k.replace(/:[0-9a-f]{32}/g, ":ID").replace(/\{[a-z]\d+\}/, "{}")))].slice(0, 8).join(" ")}`);
    }
    const framesBefore = [...online, ...outsiders].map((d) => d.pushes("message").length + d.pushes("sessionDelta").length + d.pushes("badgeUpdate").length);
    // what the node writes by itself meanwhile (the baseline): one more quiet window
    written.clear();
    await new Promise((r) => setTimeout(r, window));
    const background = new Set(written);
    written.clear();

    // the storm: reactor i (members[1..5000], the owner excluded) reacts KEYS[i % 3] once; arrivals timed per device
    const arrivals = new Map<Device, { at: number; version: number; counts: Record<string, number> }[]>();
    for (const d of [...online, ...outsiders]) {
      arrivals.set(d, []);
      d.ws.on("message", (data: Buffer) => {
        const f = Frame.decode(data);
        if (f.body?.$case !== "reactionUpdate") return;
        const r = f.body.reactionUpdate.reactions!;
        arrivals.get(d)!.push({ at: performance.now(), version: Number(r.summaryVersion), counts: Object.fromEntries(r.counts.map((c) => [c.key, Number(c.count)])) });
      });
    }
    const reactors = members.slice(1, REACTORS + 1);
    await eachLimited(reactors.map((user, i) => ({ user, key: KEYS[i % KEYS.length]! })), 16, async ({ user, key }) => {
      const r = await op.react({ tenant, group, conversationSeq: seq, user, reactionKey: key, remove: false, reason: "C-1" });
      assert.equal(r.changed, true);
    });
    await new Promise((r) => setTimeout(r, window));
    clearInterval(keepalive);
    assert.deepEqual([...online, ...outsiders].map((d) => d.closed), [...online, ...outsiders].map(() => null), "every device stayed connected");
    await sub.punsubscribe();
    sub.disconnect();
    await watcher.config("SET", "notify-keyspace-events", "");

    // the counts, worked out from the keys chosen
    const expected: Record<string, number> = {};
    reactors.forEach((_, i) => (expected[KEYS[i % KEYS.length]!] = (expected[KEYS[i % KEYS.length]!] ?? 0) + 1));
    assert.deepEqual(expected, { "👍": 1667, "❤️": 1667, party: 1666 });

    // 0 writes beyond the reaction keys and the node's own background
    const reactionKeys = [...written].filter((k) => /:rx(sum|who):/.test(k));
    const other = [...written].filter((k) => !/:rx(sum|who):/.test(k) && !background.has(k));
    assert.deepEqual(other, [], "keys written by the reactions other than their own");
    assert.equal(reactionKeys.length, 2, `the message's summary and who: ${reactionKeys.join(", ")}`);
    assert.deepEqual([...written].filter((k) => busy.test(k) || /:(cseq|idem)(:|$)/.test(k)), [], "no history, outbox, unread, list, badge or projection key");

    // 0 pushes: no MESSAGE, SESSION_DELTA or BADGE_UPDATE during the storm
    const framesAfter = [...online, ...outsiders].map((d) => d.pushes("message").length + d.pushes("sessionDelta").length + d.pushes("badgeUpdate").length);
    assert.deepEqual(framesAfter, framesBefore);

    // REACTION_UPDATE: none to the outsiders; each member's device some, spaced by the window, the last one final
    for (const d of outsiders) assert.deepEqual(arrivals.get(d), []);
    for (const d of online) {
      const got = arrivals.get(d)!;
      assert.ok(got.length >= 1, "an online member got the counts");
      for (let i = 1; i < got.length; i++) {
        assert.ok(got[i]!.at - got[i - 1]!.at >= REACTION_PUSH_MERGE_WINDOW_MS * 0.9, `frames ${i - 1} and ${i} ${(got[i]!.at - got[i - 1]!.at).toFixed(0)} ms apart`);
        assert.ok(got[i]!.version > got[i - 1]!.version, "versions only grow");
      }
      assert.deepEqual(got.at(-1), { at: got.at(-1)!.at, version: REACTORS, counts: expected });
    }
    const summary = await op.getReactions({ tenant, group, conversationSeq: seq, withUsers: false, cursor: "", limit: 0 });
    // past reaction_detail_max_members (1,000): no detail row, every reaction counted by its mark alone
    assert.deepEqual([Number(summary.summary!.summaryVersion), Number(summary.summary!.detailRows), Number(summary.summary!.withoutDetail)], [REACTORS, 0, REACTORS]);
    console.log(`# C-1: ${MEMBERS} members, ${REACTORS} reactions; frames per online device ${online.map((d) => arrivals.get(d)!.length).join(",")}; keys written by the storm: ${reactionKeys.length} (+${written.size - reactionKeys.length} background)`);
    for (const d of [...online, ...outsiders]) d.ws.close();
  });
});
