/**
 * J-7 (spec 002 §9): a crash injected mid-flush — a real consumer process killed with SIGKILL
 * while it writes rows — leaves every user's badge equal to the sum of their rows (the badge
 * moves in the same Lua step as the rows). A consumer started afterwards replays from the
 * checkpoint the dead one never moved and every row equals the definition, computed here by hand.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { newUuid, type Uuid } from "../../../core/index.js";
import { useList } from "./fixture.js";

const fx = useList("single");

/** Badge sums of §4 computed from a user's stored rows (their fields read here, not by the engine). */
async function sumsOfStored(tenant: Uuid, user: Uuid): Promise<{ totalUnread: number; totalMention: number; mutedUnread: number; badge: Record<string, string> }> {
  const k = fx.engine.conversationList.service.listKeys(tenant, user);
  const client = fx.store.clientFor(k.tag);
  const [rows, badge] = await Promise.all([client.hvals(k.rows), client.hgetall(k.badge)]);
  let totalUnread = 0;
  let totalMention = 0;
  let mutedUnread = 0;
  for (const raw of rows) {
    const f = raw.split("|"); // joinedAt|leftAt|state|read|hidden|deleted|pin|muted|archived|…|unread(13)|…|mentions(16)
    const active = f[2] === "A";
    const muted = f[7] === "1";
    if (active && f[8] !== "1" && !muted) totalUnread += Number(f[12]);
    if (active) totalMention += Number(f[15]);
    if (muted) mutedUnread += Number(f[12]);
  }
  return { totalUnread, totalMention, mutedUnread, badge };
}

test("J-7: SIGKILL mid-flush — total_unread = Σ rows for every user; the next consumer converges to the definition", { timeout: 300_000 }, async () => {
  const tenant = fx.tenant();
  const c = fx.engine.conversations;
  const owner = newUuid();
  const users = Array.from({ length: 300 }, () => newUuid());
  const groups: Uuid[] = [];
  for (let i = 0; i < 3; i++) groups.push((await c.createGroup({ tenant, owner, members: users })).group);
  // by hand: group i gets i + 2 messages from the owner, the last one mentioning everyone
  for (const [i, g] of groups.entries()) {
    for (let m = 0; m < i + 2; m++) await c.send({ tenant, group: g, sender: owner, text: "x", ...(m === i + 1 ? { mentions: users.slice(0, 100) } : {}) });
  }
  await fx.engine.relay.drainAll();
  // a first window written by the fixture's consumer, so that the crash hits rows that exist
  await fx.settle();
  await fx.engine.conversationList.service.mute(tenant, users[0]!, groups[0]!);
  for (const [i, g] of groups.entries()) await c.send({ tenant, group: g, sender: owner, text: "y", ...(i === 0 ? { mentions: users.slice(0, 50) } : {}) });
  await fx.engine.relay.drainAll();

  const child = spawn(process.execPath, [fileURLToPath(new URL("./flush-child.js", import.meta.url))], {
    env: { ...process.env, QIM_LIST_CHILD: JSON.stringify({ topology: fx.topology.config, keyPrefix: fx.engine.keys.prefix, partitionCount: 4 }) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  let flushed = 0;
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
    flushed = (out.match(/^flushed [0-9a-f-]{36}$/gm) ?? []).length;
    if (flushed >= 40 && child.exitCode === null && !child.killed) child.kill("SIGKILL");
  });
  const [code, signal] = await new Promise<[number | null, string | null]>((resolve) => child.on("exit", (cc, s) => resolve([cc, s])));
  assert.equal(signal, "SIGKILL", `killed mid-flush (code ${code}, ${flushed} users flushed, out tail ${out.slice(-200)})`);
  assert.ok(flushed >= 40 && flushed < users.length + 1, `died partway: ${flushed} of ${users.length + 1} users written`);

  for (const u of [owner, ...users]) {
    const s = await sumsOfStored(tenant, u);
    assert.equal(Number(s.badge.total_unread ?? 0), s.totalUnread, `user ${u}: total_unread = Σ rows`);
    assert.equal(Number(s.badge.total_mention ?? 0), s.totalMention);
    assert.equal(Number(s.badge.muted_unread ?? 0), s.mutedUnread);
  }

  // the next consumer (this process's) replays from the checkpoint the dead one never moved
  await fx.engine.conversationList.compactor.load();
  await fx.settle();
  const list = fx.engine.conversationList.service;
  for (const [j, u] of users.entries()) {
    for (const [i, g] of groups.entries()) {
      const row = await list.row(tenant, u, g);
      // by hand: i + 3 messages, all unread; mentions: the last of the first batch (users 0..99), and in group 0 the newest (users 0..49)
      const mentions = (j < 100 ? 1 : 0) + (i === 0 && j < 50 ? 1 : 0);
      assert.deepEqual({ unread: row?.unread, mentions: row?.mentions }, { unread: i + 3, mentions }, `user ${j} group ${i}`);
    }
    const badge = await list.badge(tenant, u);
    const muted = j === 0 ? 3 : 0;
    const mentions = (j < 100 ? 3 : 0) + (j < 50 ? 1 : 0);
    assert.deepEqual({ u: badge.totalUnread, m: badge.totalMention, mu: badge.mutedUnread }, { u: 3 + 4 + 5 - muted, m: mentions, mu: muted }, `badge of user ${j}`);
  }
});
