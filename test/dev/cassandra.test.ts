/**
 * The dev stack and the demo with Cassandra as the conversation-set authority: when
 * QIM_CASSANDRA_CONTACT_POINTS is set, `dev up` passes it to the server, which uses Cassandra, and
 * says so. A real single-node Cassandra (test/harness/cassandra.ts; scripts/run-tests.mjs starts
 * one for files named *cassandra*), its own keyspace.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { sharedCassandra, uniqueKeyspace } from "../harness/cassandra.js";
import { killMentioning, ok, processesMentioning, qimctl } from "./helpers.js";

describe("qimctl dev up and demo with Cassandra as the authority", { timeout: 400_000 }, () => {
  let tmp: string;
  let env: NodeJS.ProcessEnv;
  let contactPoint: string;

  before(async () => {
    tmp = mkdtempSync(path.join(os.tmpdir(), "qimctl-dev-cassandra-"));
    contactPoint = (await sharedCassandra()).contactPoint;
    env = { XDG_CONFIG_HOME: tmp, QIM_CASSANDRA_CONTACT_POINTS: contactPoint, QIM_CASSANDRA_KEYSPACE: uniqueKeyspace("dev_up"), QIM_CASSANDRA_CONSISTENCY: "ONE" };
  });

  after(async () => {
    await qimctl(["dev", "down", "--data-dir", path.join(tmp, "dev")], { env });
    const left = killMentioning(tmp);
    rmSync(tmp, { recursive: true, force: true });
    assert.deepEqual(left, [], "a test left processes behind");
  });

  it("dev up says 'cassandra at …'; the demo's drill rebuilds from Cassandra", async () => {
    const dir = path.join(tmp, "dev");
    const up = await qimctl(["dev", "up", "--data-dir", dir], { env, json: false });
    assert.equal(up.code, 0, `${up.stdout}\n${up.stderr}`);
    assert.match(up.stdout, new RegExp(`conversation-set authority: cassandra at ${contactPoint.replace(/\./g, "\\.")} keyspace dev_up_`));
    const state = ok(await qimctl(["dev", "up", "--data-dir", dir], { env }), "dev up (reused)");
    assert.equal(state.authorityKind, "cassandra");
    assert.equal(ok(await qimctl(["dev", "status", "--data-dir", dir], { env }), "status").authority, state.authority);

    const demo = ok(await qimctl(["demo", "--data-dir", dir, "--down"], { env }), "demo");
    assert.equal(demo.ok, true, JSON.stringify(demo.steps.filter((s: any) => !s.ok)));
    assert.match(demo.authority, /^cassandra /);
    assert.match(demo.steps.find((s: any) => s.name === "rebuild-drill").details.report.authority, /^cassandra /);
    assert.deepEqual(processesMentioning(dir), []);
  });
});
