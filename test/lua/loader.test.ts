import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { InternalError } from "../../core/index.js";
import { KeySpace } from "../../core/index.js";
import { callScript, declaredScripts, defineScript, inlineIncludes, loadScripts, loadScriptsFrom, SCRIPT_VERSION } from "../../core/index.js";
import { RedisStore } from "../../core/index.js";
import { startRedis, type RedisServer } from "../harness/redis.js";
import { Conv, SCRIPT_KEYS, hexIds } from "./helpers.js";
import { conversationKeys } from "../../core/index.js";
import { newUuid } from "../../core/index.js";

/** The key count of each script, as its file name in lua/<module>/ carries it. */
const EXPECTED_KEYS: Record<string, number | "n"> = {
  createGroup: 2,
  commitMessages: 8,
  applyMembership: 9,
  transferOwner: 4,
  dissolveGroup: 6,
  readPlan: 2,
  loadForDispatch: 7,
  readLog: 1,
  appendRecords: 1,
  markCommitted: 8,
  expandAudience: 3,
  saveFanoutProgress: 4,
  readHistory: 3,
  conversationSummary: 5,
  markRead: 4,
  projectEntries: "n",
  popRegistered: 2,
  deadLetterRegistration: 2,
  advanceCheckpoint: 2,
  bumpEpoch: 2,
  raiseEpochMark: 1,
  releaseLock: 1,
  heartbeat: 3,
  acquireUnit: 1,
  releaseUnit: 1,
  recomputeUnread: 5,
  applyRows: 4,
  readLiveView: 4,
  advanceListCheckpoint: 1,
  upsertCmdStates: 4, advanceCmdStateReads: 3, indexLegacyCmdStates: 5,
  // CMD log (core/cmd-log/scripts.ts) and its catch-up scan (core/cmd-sync/scripts.ts)
  commitCmd: 6,
  scanCmdRecent: 1,
  scanCmdRecents: "n",
  raiseCmdFlushPoint: 2,
  // device tokens (core/tokens/scripts.ts)
  recordToken: 2, revokeToken: 3, revokeDevice: 3,
  // retention (core/retention/scripts.ts)
  trimConversation: 9, trimCmdHistory: 5,
  // delivery (core/delivery/scripts.ts)
  advanceDeliveryCheckpoint: 2,
  // the message-type registry (core/registry/scripts.ts)
  applyTypes: 1,
  // recall and edit (core/conversation/scripts.ts)
  commitAnchorEvent: 7, applyAnchorEvent: 4,
  // reactions (core/reactions/scripts.ts)
  react: 5,
  // RTC signalling (core/rtc/scripts.ts)
  callState: 1,
};
const SCRIPT_NAMES = Object.keys(EXPECTED_KEYS);

/** The module folder each script lives in. */
const MODULE_OF: Record<string, string> = {
  createGroup: "conversation", commitMessages: "conversation", applyMembership: "conversation", transferOwner: "conversation", dissolveGroup: "conversation", readPlan: "conversation", readHistory: "conversation",
  conversationSummary: "conversation", markRead: "conversation", loadForDispatch: "dispatch", readLog: "dispatch", appendRecords: "dispatch", markCommitted: "dispatch", expandAudience: "dispatch", saveFanoutProgress: "dispatch", projectEntries: "projection",
  popRegistered: "projection", deadLetterRegistration: "projection", advanceCheckpoint: "projection", bumpEpoch: "projection", raiseEpochMark: "projection",
  releaseLock: "projection", heartbeat: "cluster", acquireUnit: "cluster", releaseUnit: "cluster",
  recomputeUnread: "conversation-list", applyRows: "conversation-list", readLiveView: "conversation-list", advanceListCheckpoint: "conversation-list",
  upsertCmdStates: "cmd-sync", advanceCmdStateReads: "cmd-sync", indexLegacyCmdStates: "cmd-sync",
  commitCmd: "cmd-sync", scanCmdRecent: "cmd-sync", scanCmdRecents: "cmd-sync", raiseCmdFlushPoint: "cmd-sync",
  recordToken: "tokens", revokeToken: "tokens", revokeDevice: "tokens",
  trimConversation: "retention", trimCmdHistory: "retention",
  advanceDeliveryCheckpoint: "delivery",
  applyTypes: "registry",
  commitAnchorEvent: "conversation", applyAnchorEvent: "conversation",
  react: "reactions",
  callState: "rtc",
};

const tempDirs: string[] = [];
after(() => {
  for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
});

/**
 * A lua/ folder with a trivial file for every known script plus `files` (path -> text; a null
 * text deletes a default file).
 */
function luaDir(files: Record<string, string | null> = {}): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "qim-lua-"));
  tempDirs.push(dir);
  mkdirSync(path.join(dir, "includes"));
  const all: Record<string, string | null> = {};
  for (const name of SCRIPT_NAMES) all[`${name}-${EXPECTED_KEYS[name]}.lua`] = `-- ${name}\nreturn 1\n`;
  Object.assign(all, files);
  for (const [rel, text] of Object.entries(all)) if (text !== null) writeFileSync(path.join(dir, rel), text);
  return dir;
}

function occurrences(text: string, needle: string): number {
  return text.split(needle).length - 1;
}

test("loader: the key count comes from the file name and the command name is versioned", () => {
  const dir = luaDir({ "createGroup-2.lua": null, "createGroup-7.lua": "return 7\n" });
  const scripts = loadScriptsFrom(dir);
  assert.deepEqual([...scripts.keys()].sort(), [...SCRIPT_NAMES].sort());
  const cg = scripts.get("createGroup")!;
  assert.equal(cg.numberOfKeys, 7);
  assert.equal(cg.command, `qim_v${SCRIPT_VERSION}_createGroup`);
  assert.equal(cg.lua, "return 7\n");
  assert.equal(scripts.get("applyMembership")!.numberOfKeys, 9);
  assert.equal(scripts.get("commitMessages")!.numberOfKeys, 8);
  assert.equal(scripts.get("loadForDispatch")!.numberOfKeys, 7);
});

test("loader: includes are inlined once, nested ones first, with or without .lua", () => {
  const dir = luaDir({
    "includes/a.lua": "local function a() return 1 end\n",
    "includes/b.lua": '--- @include "includes/a"\nlocal function b() return a() + 1 end\n',
    "createGroup-2.lua": '--- @include "includes/b"\n--- @include "includes/a"\n--- @include "includes/a.lua"\nreturn b()\n',
  });
  const lua = loadScriptsFrom(dir).get("createGroup")!.lua;
  assert.equal(occurrences(lua, "local function a()"), 1);
  assert.equal(occurrences(lua, "local function b()"), 1);
  assert.ok(lua.indexOf("local function a()") < lua.indexOf("local function b()"), "a is defined before b uses it");
  assert.doesNotMatch(lua, /@include/);
  assert.match(lua, /return b\(\)\n$/);

  // the same through inlineIncludes directly
  const direct = inlineIncludes(dir, '--- @include "includes/a"\n--- @include "includes/a"\nreturn a()\n', "x.lua");
  assert.equal(direct, "local function a() return 1 end\n\n\nreturn a()\n");
});

test("loader: a missing include fails with a message naming it and the including file", () => {
  const dir = luaDir({ "markRead-3.lua": '--- @include "includes/nope"\nreturn 1\n' });
  assert.throws(() => loadScriptsFrom(dir), /missing Lua include "includes\/nope" in markRead-3\.lua/);
  const nested = luaDir({
    "includes/a.lua": '--- @include "includes/gone"\nlocal function a() end\n',
    "markRead-3.lua": '--- @include "includes/a"\nreturn 1\n',
  });
  assert.throws(() => loadScriptsFrom(nested), /missing Lua include "includes\/gone" in includes\/a\.lua/);
});

test("loader: a circular include fails", () => {
  const dir = luaDir({
    "includes/x.lua": '--- @include "includes/y"\nlocal function x() end\n',
    "includes/y.lua": '--- @include "includes/x"\nlocal function y() end\n',
    "readHistory-2.lua": '--- @include "includes/x"\nreturn 1\n',
  });
  assert.throws(() => loadScriptsFrom(dir), /circular Lua include includes\/x\.lua -> includes\/y\.lua -> includes\/x\.lua/);
  const self = luaDir({
    "includes/s.lua": '--- @include "includes/s"\nlocal function s() end\n',
    "readHistory-2.lua": '--- @include "includes/s"\nreturn 1\n',
  });
  assert.throws(() => loadScriptsFrom(self), /circular Lua include/);
});

test("loader: scripts are found in module folders, each named after its folder", () => {
  const dir = luaDir({ "markRead-4.lua": null });
  mkdirSync(path.join(dir, "conversation"));
  writeFileSync(path.join(dir, "conversation", "markRead-4.lua"), "return 3\n");
  const s = loadScriptsFrom(dir).get("markRead")!;
  assert.equal(s.module, "conversation");
  assert.equal(s.file, "conversation/markRead-4.lua");
  assert.equal(s.lua, "return 3\n");
});

test("loader: every script file is declared once by its module, with the key count of its file name", () => {
  const files = loadScripts();
  const declared = new Map(declaredScripts().filter((d) => d.name !== "neverWritten").map((d) => [d.name, d.numberOfKeys]));
  assert.deepEqual([...declared.keys()].sort(), [...files.keys()].sort());
  for (const [name, file] of files) assert.equal(declared.get(name), file.numberOfKeys, name);
});

test("loader: a declared script without its file fails at its first call, naming the file it wants", async () => {
  const s = defineScript({ name: "neverWritten", keys: ["k"], args: () => [], reply: (r) => r });
  await assert.rejects(s.run({}, { k: "x" }, {}), (e: unknown) => e instanceof InternalError && /no Lua file defines script neverWritten/.test(e.message));
});

test("loader: a script file without its key count in the name fails, naming the file", () => {
  const dir = luaDir({ "markCommitted-4.lua": null, "markCommitted.lua": "return 1\n" });
  assert.throws(() => loadScriptsFrom(dir), /lua\/markCommitted\.lua: a script file is named <name>-<numberOfKeys>\.lua/);
});

test("loader: a stray .lua file at the top of lua/ fails; a missing script fails as missing", () => {
  assert.throws(() => loadScriptsFrom(luaDir({ "stray.lua": "return 1\n" })), /lua\/stray\.lua: a script file is named/);
  assert.throws(() => loadScriptsFrom(luaDir({ "commit_message-3.lua": "return 1\n" })), /commit_message-3\.lua: a script file is named/);
});

test("loader: two files for one script fail", () => {
  const dir = luaDir({ "markRead-5.lua": "return 1\n" });
  assert.throws(() => loadScriptsFrom(dir), /two files define script markRead: lua\/markRead-4\.lua and lua\/markRead-5\.lua/);
});

test("loader: loadScripts() reads every script of lua/ with the key count of its file name", () => {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
  const onDisk = new Map<string, number | "n">();
  for (const dir of readdirSync(path.join(root, "lua"))) {
    if (dir === "includes") continue;
    for (const f of readdirSync(path.join(root, "lua", dir))) {
      const m = /^([A-Za-z]+)-(\d+|n)\.lua$/.exec(f);
      if (m) onDisk.set(m[1]!, m[2] === "n" ? "n" : Number(m[2]));
      if (m) assert.equal(MODULE_OF[m[1]!], dir, `${f} lives in lua/${MODULE_OF[m[1]!]}/`);
    }
  }
  const scripts = loadScripts();
  const keys = conversationKeys(new KeySpace("x"), newUuid(), newUuid());
  assert.deepEqual([...scripts.keys()].sort(), [...SCRIPT_NAMES].sort());
  assert.deepEqual([...onDisk.keys()].sort(), [...SCRIPT_NAMES].sort());
  for (const name of SCRIPT_NAMES) {
    const s = scripts.get(name)!;
    assert.equal(s.numberOfKeys ?? "n", onDisk.get(name), name);
    assert.equal(s.numberOfKeys ?? "n", EXPECTED_KEYS[name], name);
    assert.equal(s.command, `qim_v${SCRIPT_VERSION}_${name}`);
    assert.doesNotMatch(s.lua, /@include/, name);
    for (const m of s.lua.matchAll(/local function (\w+)\(/g)) {
      assert.equal(occurrences(s.lua, `local function ${m[1]}(`), 1, `${name}: ${m[1]} defined once`);
    }
    // the tests' key lists follow the headers
    if (name in SCRIPT_KEYS) assert.equal(SCRIPT_KEYS[name as keyof typeof SCRIPT_KEYS](keys).length, s.numberOfKeys, name);
  }
});

let server: RedisServer | undefined;
let store: RedisStore | undefined;
before(async () => {
  server = await startRedis();
  store = new RedisStore({ kind: "instances", addrs: [server.addr] });
});
after(async () => {
  await store?.close();
  await server?.stop();
});

test("loader: callScript with the wrong number of keys throws and runs nothing", async () => {
  const c = new Conv({ server: server!, store: store! });
  const [owner] = hexIds(1) as [string];
  for (const keys of [[c.keys.grpmeta], [c.keys.grpmeta, c.keys.grpmembers, c.keys.hist]]) {
    await assert.rejects(
      callScript(c.client, "createGroup", keys, [owner, 1, owner]),
      (e: unknown) => e instanceof InternalError && e.code === "INTERNAL" && /createGroup takes 2 keys, called with \d/.test(e.message),
    );
  }
  assert.equal(await c.exists(c.keys.grpmeta), 0);
  assert.deepEqual(await callScript(c.client, "createGroup", [c.keys.grpmeta, c.keys.grpmembers], [owner, 1, owner]), [0, 1, 1]);
});

test("loader: callScript on a client without the scripts defined throws", async () => {
  const plain = new Redis({ host: server!.host, port: server!.port, lazyConnect: true });
  try {
    await assert.rejects(callScript(plain, "markRead", ["a", "b", "c", "d"], ["x", 1]), /script markRead is not defined on this client/);
  } finally {
    plain.disconnect();
  }
});
