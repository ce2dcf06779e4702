import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cassandraSettingsProblem, parseDuration } from "../../admin-api/daemon-settings.js";

describe("daemon settings", () => {
  it("--dispatch-retention takes 90s, 30m, 6h, 1d (a bare number is seconds) or off", () => {
    assert.equal(parseDuration("90s"), 90_000);
    assert.equal(parseDuration("30m"), 1_800_000);
    assert.equal(parseDuration("6h"), 21_600_000);
    assert.equal(parseDuration("1d"), 86_400_000);
    assert.equal(parseDuration("1.5h"), 5_400_000);
    assert.equal(parseDuration("120"), 120_000);
    assert.equal(parseDuration("2500ms"), 2500);
    assert.equal(parseDuration("off"), 0);
    assert.equal(parseDuration("0"), 0);
    for (const bad of ["", "1w", "-1d", "500ms", "366d", "1 d", "d", "1e3s"]) {
      assert.throws(() => parseDuration(bad), /expected a duration from 1s to 365d/, bad);
    }
  });

  it("the other --cassandra-* flags need --cassandra-contact-points", () => {
    assert.equal(cassandraSettingsProblem({}), null);
    assert.equal(cassandraSettingsProblem({ cassandraContactPoints: "10.0.0.1,10.0.0.2:9042", cassandraKeyspace: "qim" }), null);
    assert.equal(cassandraSettingsProblem({ cassandraKeyspace: "qim" })?.flag, "--cassandra-keyspace");
    assert.equal(cassandraSettingsProblem({ cassandraConsistency: "ONE" })?.flag, "--cassandra-consistency");
    assert.equal(cassandraSettingsProblem({ cassandraContactPoints: " , " })?.flag, "--cassandra-contact-points");
  });
});
