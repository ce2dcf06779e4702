/**
 * The server's V8 flags (server/node-flags.ts): bin/qim-admin-server.js's first line gives them
 * to node when the file is run as a program, the launchers that start it with `node` pass the same,
 * and a server started without them says so in its log.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { SERVER_NODE_FLAGS, SERVER_SEMI_SPACE_MIB, semiSpaceMiB } from "../../server/node-flags.js";
import { writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { startRedis, type RedisServer } from "../harness/redis.js";
import { ADMIN_SERVER, startServerProcess } from "../reliability/server-process.js";

const NOTE = /note: node runs with V8's default young generation; start the server with node --max-semi-space-size=32/;

describe("the server's node flags", { timeout: 120_000 }, () => {
  it("semiSpaceMiB reads node's arguments and NODE_OPTIONS, the later one winning", () => {
    assert.equal(semiSpaceMiB([], ""), null);
    assert.equal(semiSpaceMiB(["--max-semi-space-size=32"], ""), 32);
    assert.equal(semiSpaceMiB(["--max_semi_space_size=8"], ""), 8);
    assert.equal(semiSpaceMiB([], "--trace-warnings --max-semi-space-size=64"), 64);
    // node applies NODE_OPTIONS first, then its own arguments
    assert.equal(semiSpaceMiB(["--max-semi-space-size=16"], "--max-semi-space-size=64"), 16);
    assert.equal(semiSpaceMiB(["--max-old-space-size=4096"], ""), null);
    assert.deepEqual(SERVER_NODE_FLAGS, [`--max-semi-space-size=${SERVER_SEMI_SPACE_MIB}`]);
  });

  it("bin/qim-admin-server.js's first line gives node exactly SERVER_NODE_FLAGS", () => {
    const first = readFileSync(ADMIN_SERVER, "utf8").split("\n")[0]!;
    assert.equal(first, `#!/usr/bin/env -S node ${SERVER_NODE_FLAGS.join(" ")}`);
    // and the kernel and env(1) here run it so: a program with that first line sees the flags
    const dir = mkdtempSync(path.join(os.tmpdir(), "qim-node-flags-"));
    try {
      const probe = path.join(dir, "probe.mjs");
      writeFileSync(probe, `${first}\nconsole.log(JSON.stringify(process.execArgv));\n`);
      chmodSync(probe, 0o755);
      const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ""}` };
      delete env.NODE_OPTIONS;
      assert.deepEqual(JSON.parse(execFileSync(probe, { env, encoding: "utf8" })), [...SERVER_NODE_FLAGS]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  describe("a real server process", () => {
    let dir: string;
    let pki: TestPkiFiles;
    let redis: RedisServer;
    before(async () => {
      dir = mkdtempSync(path.join(os.tmpdir(), "qim-node-flags-server-"));
      pki = await writeTestPki(path.join(dir, "pki"));
      redis = await startRedis();
    });
    after(async () => {
      await redis?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    for (const [name, nodeFlags, noted] of [["started as it ships", SERVER_NODE_FLAGS, false], ["started without the flags", [], true]] as const) {
      it(`${name}: ${noted ? "logs the note" : "no note"}`, async () => {
        const server = await startServerProcess({ redisAddr: redis.addr, pki, auditLog: path.join(dir, `audit-${String(noted)}.log`), nodeFlags });
        try {
          await server.waitForLog(/qim admin server listening on/);
          assert.equal(NOTE.test(server.log()), noted, server.log());
        } finally {
          await server.stop();
        }
      });
    }
  });
});
