/**
 * The conversation-set authority on a real single-node Cassandra 5.0 (started once per test run
 * by scripts/run-tests.mjs, or by the harness when run alone). Without Cassandra these tests
 * fail; they never skip. The scenarios are shared with the secured node's tests
 * (authority-cassandra-secure.test.ts).
 */
import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { CassandraAuthority } from "../../core/index.js";
import { sharedCassandra, uniqueKeyspace } from "../harness/cassandra.js";
import { cassandraAuthorityScenarios } from "./authority-cassandra-scenarios.js";

let contactPoints: string[] = [];
before(async () => {
  contactPoints = [(await sharedCassandra()).contactPoint];
});

cassandraAuthorityScenarios(() => ({ contactPoints }));

describe("CassandraAuthority settings and outages", () => {
  it("an unreachable Cassandra fails init with UNAVAILABLE: one line naming the contact point and the reason", async () => {
    const a = new CassandraAuthority({ contactPoints: ["127.0.0.1:1"], keyspace: uniqueKeyspace("down"), connectTimeoutMs: 500 });
    await assert.rejects(a.init(), (err: Error & { code?: string }) => {
      assert.equal(err.code, "UNAVAILABLE");
      assert.match(err.message, /^cannot reach Cassandra at 127\.0\.0\.1:1: 127\.0\.0\.1:1: connect ECONNREFUSED/);
      assert.ok(!err.message.includes("\n"), `one line, no driver stack: ${err.message}`);
      return true;
    });
    await a.close();
  });

  it("bad settings are refused before connecting", () => {
    assert.throws(() => new CassandraAuthority({ contactPoints, keyspace: "Bad-Name" }), /keyspace/);
    assert.throws(() => new CassandraAuthority({ contactPoints, consistency: "SOMETIMES" }), /consistency/);
    assert.throws(() => new CassandraAuthority({ contactPoints: [] }), /contact point/);
    assert.throws(() => new CassandraAuthority({ contactPoints, credentials: { username: "", password: "x" } }), /user name/);
    assert.throws(() => new CassandraAuthority({ contactPoints, tls: { certPem: "-----BEGIN CERTIFICATE-----" } }), /needs its key/);
  });
});
