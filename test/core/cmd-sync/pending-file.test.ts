/**
 * The pending file (spec 001 + notes): `<dataDir>/conversationv2/cmd_conversation_updates.json`
 * saved on stop (.tmp, sync, close, rename) and loaded on start before the flush loop; the
 * restored file stays until a later flush or save succeeds; an undecodable file is renamed `.bad`
 * (replacing an older one) and the updater starts without it; an empty file is removed.
 * Entries reach the file at stop when their final flush is refused: the slot's lease was taken by
 * another owner (a real refusal of the real Redis store).
 */
import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CmdPendingUpdater, decodePendingFile, newUuid, pendingFilePath, slotOfUser, type ConversationIntent, type KeySpace, type RedisCmdStateStore, type Uuid,
} from "../../../core/index.js";
import { releaseLease, SOLO, takeLease, useCmdRedis } from "./fixture.js";

const fx = useCmdRedis("single");
const dirs: string[] = [];
after(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });
const tempDir = () => { const d = mkdtempSync(join(tmpdir(), "qim-cmd-")); dirs.push(d); return d; };
const ch = (channelId: string, channelType = 2) => ({ channelId, channelType });

function intent(tenant: Uuid, channelId: string, messageSeq: number, activeAt: number, users: [Uuid, number][]): ConversationIntent {
  return { tenant, channel: ch(channelId), messageSeq, activeAt, userReadSeqs: new Map(users) };
}

function make(dataDir: string, space: KeySpace, states: RedisCmdStateStore, lines: string[] = []) {
  void space;
  return new CmdPendingUpdater({ store: states, dataDir, slotOf: slotOfUser, fenceOf: () => SOLO, flushIntervalMs: 0, log: (l) => lines.push(l) });
}

describe("the pending file", () => {
  it("round trip: entries whose final flush is refused are saved at stop and listed again after start; no .tmp is left", async () => {
    const dir = tempDir();
    const { space, states } = fx.fresh();
    const t = newUuid();
    const [u1, u2] = [newUuid(), newUuid()];
    for (const u of [u1, u2]) await takeLease(fx.store, space, slotOfUser(t, u));
    const a = make(dir, space, states);
    await a.start();
    a.pushIntent(intent(t, "g1____cmd", 5, 50, [[u1, 5], [u2, 0]]));
    a.pushIntent(intent(t, "g1____cmd", 7, 70, [[u2, 0]]));
    a.pushIntent(intent(t, "nested____cmd____cmd", 2, 20, [[u1, 0]]));
    const before = { u1: a.listPending(t, u1, 10), u2: a.listPending(t, u2, 10) };
    await a.stop();
    const path = pendingFilePath(dir);
    assert.equal(path, join(dir, "conversationv2", "cmd_conversation_updates.json"));
    assert.ok(existsSync(path));
    assert.deepEqual(readdirSync(join(dir, "conversationv2")), ["cmd_conversation_updates.json"]);
    const file = decodePendingFile(readFileSync(path, "utf8"));
    const g1 = file.find((u) => u.command_channel_id === "g1____cmd")!;
    assert.deepEqual(g1.user_read_seqs, { [u1]: 5, [u2]: 0 });
    assert.deepEqual(g1.user_last_msg_seqs, { [u1]: 5, [u2]: 7 }, "the per-user last seq is saved");

    const b = make(dir, space, states);
    await b.start();
    assert.deepEqual({ u1: b.listPending(t, u1, 10), u2: b.listPending(t, u2, 10) }, before);
    assert.equal(b.badFile, null);
    assert.ok(existsSync(path), "the restored file stays until a later flush or save succeeds");
    await assert.rejects(b.flush());
    assert.ok(existsSync(path), "a failed flush keeps it");
    for (const u of [u1, u2]) await releaseLease(fx.store, space, slotOfUser(t, u));
    await b.flush();
    assert.equal(b.size(), 0);
    assert.equal(existsSync(path), false, "a successful flush with nothing left removes it");
    assert.equal((await states.get(t, u2, ch("g1____cmd")))!.activeAt, 70);
    await b.stop();
    assert.equal(existsSync(path), false);
  });

  it("undecodable: renamed .bad (an older .bad replaced), logged, and the updater starts empty", async () => {
    const dir = tempDir();
    const { space, states } = fx.fresh();
    const path = pendingFilePath(dir);
    mkdirSync(join(dir, "conversationv2"));
    writeFileSync(`${path}.bad`, "older");
    writeFileSync(path, "{not json");
    const lines: string[] = [];
    const a = make(dir, space, states, lines);
    await a.start();
    assert.equal(a.badFile, `${path}.bad`);
    assert.equal(existsSync(path), false);
    assert.equal(readFileSync(`${path}.bad`, "utf8"), "{not json");
    assert.ok(lines.some((l) => l.includes("undecodable") && l.includes(".bad")), lines.join("\n"));
    assert.equal(a.size(), 0);
    // a valid JSON list with an invalid entry (read above last seq) is undecodable too
    const t = newUuid();
    const u = newUuid();
    writeFileSync(path, JSON.stringify([{ tenant: t, command_channel_id: "g1____cmd", channel_type: 2, last_msg_seq: 3, active_at: 1, user_read_seqs: { [u]: 4 }, user_last_msg_seqs: {}, user_active_ats: {} }]));
    const b = make(dir, space, states);
    await b.start();
    assert.equal(b.badFile, `${path}.bad`);
    assert.equal(b.size(), 0);
    await a.stop();
    await b.stop();
  });

  it("an empty file is removed and nothing is loaded", async () => {
    const dir = tempDir();
    const { space, states } = fx.fresh();
    const path = pendingFilePath(dir);
    mkdirSync(join(dir, "conversationv2"));
    writeFileSync(path, "");
    const a = make(dir, space, states);
    await a.start();
    assert.equal(existsSync(path), false);
    assert.equal(a.badFile, null);
    assert.equal(a.size(), 0);
    await a.stop();
    assert.equal(existsSync(path), false, "nothing pending at stop: no file");
  });
});
