/**
 * SESSION_DELTA versions (spec 002 §5.1: per-user monotonic, a client applies only a greater one)
 * across a crash and across processes (docs/conversation-list.md, "the low-latency path"):
 * - a real engine process sends live frames ahead of what is stored, and is killed with SIGKILL
 *   before any flush; the server after it (this process's engine) sends only versions above every
 *   version the dead one sent, and a client that kept its state across the two streams applies
 *   every frame of the second (none dropped as stale, no gap);
 * - two engines on one Redis: an action one writes while the other holds a live row in a
 *   snapshot is stamped above that live row's version, so the other's next page shows it at once
 *   (not only after its own next flush).
 * - what the durable version costs, counted by Redis MONITOR: one INCR of the user's counter per
 *   live change (and one per watch opened), inside the MULTI that reads the rows — no extra round
 *   trip — and no row written.
 * The checker works on the raw frames and the raw stored rows (row.ts layout), never on the
 * engine's own view of versions.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { EngineRuntime, KeySpace, newUuid, RedisHashAuthority, SessionDeltaApplier, uuidToHex, type ApplyOutcome, type SessionFrame, type Uuid } from "../../../core/index.js";
import { useList } from "./fixture.js";

const WINDOW_MS = 60_000;
const fx = useList("single", { compactor: { windowMs: WINDOW_MS } });

/** Waits for `ok` (at most tries × 20 ms: a bound on waiting, not an assertion on time). */
async function until(ok: () => boolean | Promise<boolean>, what: string, tries = 500): Promise<void> {
  for (let i = 0; i < tries && !(await ok()); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(await ok(), what);
}

/** The stored row straight from Redis: unread (field 13), muted (8) and version (19) of row.ts's layout. */
async function storedRow(tenant: Uuid, user: Uuid, group: Uuid): Promise<{ unread: number; muted: boolean; version: number } | null> {
  const k = fx.engine.conversationList.service.listKeys(tenant, user);
  const raw = await fx.store.clientFor(k.tag).hget(k.rows, uuidToHex(group));
  if (raw === null) return null;
  const f = raw.split("|");
  return { unread: Number(f[12]), muted: f[7] === "1", version: Number(f[18]) };
}

test("live versions never go back across a SIGKILL: every frame after the restart is above every frame before", { timeout: 120_000 }, async () => {
  const tenant = fx.tenant();
  const [owner, user] = [newUuid(), newUuid()];
  const c = fx.engine.conversations;
  const { group } = await c.createGroup({ tenant, owner, members: [user] });
  await c.send({ tenant, group, sender: owner, text: "stored" });
  await fx.settle();
  assert.equal((await storedRow(tenant, user, group))?.unread, 1);

  const SENDS = 4;
  const child = spawn(process.execPath, [fileURLToPath(new URL("./live-child.js", import.meta.url))], {
    env: {
      ...process.env,
      QIM_LIVE_CHILD: JSON.stringify({ topology: fx.topology.config, keyPrefix: fx.engine.keys.prefix, partitionCount: 4, tenant, owner, user, group, sends: SENDS }),
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const before: SessionFrame[] = [];
  let out = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
    let nl: number;
    while ((nl = out.indexOf("\n")) >= 0) {
      const line = out.slice(0, nl);
      out = out.slice(nl + 1);
      if (line.startsWith("frame ")) before.push(JSON.parse(line.slice(6)) as SessionFrame);
      if (line === "ready" && child.exitCode === null && !child.killed) child.kill("SIGKILL");
    }
  });
  const [code, signal] = await new Promise<[number | null, string | null]>((resolve) => child.on("exit", (cc, s) => resolve([cc, s])));
  assert.equal(signal, "SIGKILL", `killed (code ${code}, ${before.length} frames)`);

  // the state the crash hit: the dead server showed the SENDS messages live, and stored none of them
  const rowFrames = before.filter((f) => f.kind === "delta");
  assert.equal(rowFrames.at(-1)?.kind === "delta" && rowFrames.at(-1)!.row.unread, 1 + SENDS, "the live frames showed every send");
  const maxBefore = Math.max(...before.map((f) => f.version));
  const storedAtCrash = await storedRow(tenant, user, group);
  assert.equal(storedAtCrash?.unread, 1, "no flush stored the sends");
  assert.ok(storedAtCrash!.version < maxBefore, `live frames (up to ${maxBefore}) were ahead of the stored row (${storedAtCrash?.version})`);

  // the client kept what the first stream gave it, and reconnects to the server after the crash
  const applier = new SessionDeltaApplier();
  for (const f of before) applier.apply(f);
  const after: { frame: SessionFrame; outcome: ApplyOutcome }[] = [];
  const stop = await fx.engine.sessionView.watch(tenant, user, (f) => after.push({ frame: f, outcome: applier.apply(f) }));
  // the log read replays what the dead server relayed and never stored; then two more sends, live
  await fx.deliver();
  for (let i = 0; i < 2; i++) {
    await c.send({ tenant, group, sender: owner, text: `after ${i}` });
    await fx.engine.relay.drainAll();
  }
  await until(() => applier.rows.get(group)?.unread === 1 + SENDS + 2, `the client shows the ${1 + SENDS + 2} messages live`);
  // the window's flush (a stored write), then an action (another stored write)
  await fx.settle();
  await fx.engine.conversationList.service.mute(tenant, user, group);
  await until(() => applier.rows.get(group)?.muted === true, "the mute reached the client");
  stop();

  assert.ok(after.length >= 4, `frames after the restart: ${after.length}`);
  for (const { frame } of after) assert.ok(frame.version > maxBefore, `a ${frame.kind} frame at ${frame.version} after the crash, not above ${maxBefore} sent before it`);
  assert.deepEqual(after.filter((a) => a.outcome !== "applied").map((a) => [a.frame.kind, a.frame.version, a.outcome]), [], "the client dropped no frame of the new stream");
  assert.deepEqual(await storedRow(tenant, user, group).then((r) => [r?.unread, r?.muted]), [1 + SENDS + 2, true]);
});

test("an action another engine writes is stamped above this engine's live row: its held snapshot shows it at the next page", { timeout: 60_000 }, async () => {
  const tenant = fx.tenant();
  const [owner, user] = [newUuid(), newUuid()];
  const c = fx.engine.conversations;
  const view = fx.engine.sessionView;
  const { group } = await c.createGroup({ tenant, owner, members: [user] });
  await c.send({ tenant, group, sender: owner, text: "1" });
  await fx.settle();
  // the other engine: the same Redis and keys, its own memory; nothing of it runs but the action
  const other = new EngineRuntime({
    store: fx.store,
    keyPrefix: fx.engine.keys.prefix,
    dispatch: { clusterId: "test", topicId: "dispatch", partitionCount: 4 },
    authority: new RedisHashAuthority(fx.store, new KeySpace(fx.engine.keys.prefix)),
    projection: { background: false },
    relayIntervalMs: 0,
    conversationList: { compactor: { background: false, windowMs: WINDOW_MS } },
  });
  await other.start();
  try {
    // this engine holds the user's snapshot, and a send reaches it live (not stored: no flush)
    assert.deepEqual((await view.page(tenant, user)).rows.map((r) => [r.unread, r.muted]), [[1, false]]);
    await c.send({ tenant, group, sender: owner, text: "2" });
    await fx.engine.relay.drainAll();
    let live = (await view.page(tenant, user)).rows[0]!;
    await until(async () => (live = (await view.page(tenant, user)).rows[0]!).unread === 2, "the send reached the held snapshot live");
    assert.equal((await storedRow(tenant, user, group))?.unread, 1, "not stored yet");

    await other.conversationList.service.mute(tenant, user, group);
    const written = await storedRow(tenant, user, group);
    assert.equal(written?.muted, true);
    // the next page re-reads (the user's version moved) and takes the row: muted, with the held send
    const page = await view.page(tenant, user);
    assert.deepEqual(page.rows.map((r) => [r.unread, r.muted]), [[2, true]], "the action shows at once, not at this engine's next flush");
    assert.ok(written!.version > live.version, `the other engine's stored row (${written?.version}) is above the live row this engine showed (${live.version})`);
  } finally {
    await other.stop();
  }
});

test("cost: one INCR of the user's counter per live change and per watch, in the one script call the live view makes (readLiveView, with the badge read); no row written", { timeout: 60_000 }, async () => {
  const tenant = fx.tenant();
  const [owner, user] = [newUuid(), newUuid()];
  const c = fx.engine.conversations;
  const { group } = await c.createGroup({ tenant, owner, members: [user] });
  await c.send({ tenant, group, sender: owner, text: "stored" });
  await fx.settle();
  const k = fx.engine.conversationList.service.listKeys(tenant, user);
  const addr = fx.topology.config.kind === "instances" ? fx.topology.config.addrs[0]! : "";
  const [host, port] = addr.split(":");
  const monitorClient = new Redis({ host, port: Number(port), lazyConnect: true });
  await monitorClient.connect();
  const monitor = await monitorClient.monitor();
  // per connection, the commands between MULTI and EXEC: which transaction each INCR is in
  const seen: { cmd: string; key: string; conn: string }[] = [];
  monitor.on("monitor", (_time: string, args: string[], source: string) => {
    const cmd = args[0]!.toLowerCase();
    // EVALSHA sha numkeys key… (EVAL the first time on a connection): its first key; a script's
    // own commands show with the source "lua"
    seen.push({ cmd, key: (cmd === "evalsha" || cmd === "eval" ? args[3] : args[1]) ?? "", conn: source });
  });
  try {
    const applier = new SessionDeltaApplier();
    const stop = await fx.engine.sessionView.watch(tenant, user, (f) => applier.apply(f));
    const SENDS = 3;
    for (let i = 0; i < SENDS; i++) {
      await c.send({ tenant, group, sender: owner, text: `live ${i}` });
      await fx.engine.relay.drainAll();
      await until(() => applier.rows.get(group)?.unread === 2 + i, `live change ${i}`);
    }
    stop();
    await new Promise((r) => setTimeout(r, 100)); // MONITOR lines trail the replies
    const incrs = seen.filter((x) => x.cmd === "incr" && x.key === k.version);
    assert.equal(incrs.length, 1 + SENDS, "one INCR for the watch's first badge and one per live change");
    assert.deepEqual(seen.filter((x) => x.key === k.version && x.cmd !== "incr" && x.cmd !== "get"), [], "nothing else touches the counter");
    // each INCR runs inside the script call whose first key is the user's badge (the live view's
    // one round trip), and that same call reads the badge
    for (const incr of incrs) {
      const i = seen.indexOf(incr);
      assert.match(incr.conn, /lua/, "the INCR is made by a script");
      const call = seen.slice(0, i).reverse().find((x) => !/lua/.test(x.conn));
      assert.deepEqual([call?.cmd === "evalsha" || call?.cmd === "eval", call?.key], [true, k.badge], "the script call of the live view");
      const inCall = seen.slice(seen.indexOf(call!) + 1);
      const end = inCall.findIndex((x) => !/lua/.test(x.conn));
      assert.ok(inCall.slice(0, end < 0 ? undefined : end).some((x) => x.cmd === "hgetall" && x.key === k.badge), "with the badge read of the same call");
    }
    assert.equal(seen.filter((x) => x.cmd === "evalsha" && x.key === k.rows).length, 0, "no row written on the live path");
  } finally {
    monitor.disconnect();
    await monitorClient.quit();
  }
});
