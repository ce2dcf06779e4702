import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import cassandra from "cassandra-driver";
import { sharedCassandra, uniqueKeyspace } from "./cassandra.js";

let client: cassandra.Client;
const keyspace = uniqueKeyspace("harness test");

before(async () => {
  const node = await sharedCassandra();
  client = new cassandra.Client({ contactPoints: [node.contactPoint], localDataCenter: node.localDataCenter });
  await client.connect();
});

after(async () => {
  if (!client) return;
  try {
    await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
  } finally {
    await client.shutdown();
  }
});

test("cassandra: the shared node is Cassandra 5.0", async () => {
  const rs = await client.execute("SELECT release_version, data_center FROM system.local");
  const row = rs.first();
  assert.match(String(row.get("release_version")), /^5\.0\./);
  assert.equal(row.get("data_center"), "datacenter1");
});

test("cassandra: keyspace + table, prepared insert and select round trip", async () => {
  await client.execute(`CREATE KEYSPACE ${keyspace} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`);
  await client.execute(`CREATE TABLE ${keyspace}.messages (conv text, seq bigint, body blob, sent timestamp, PRIMARY KEY (conv, seq)) WITH CLUSTERING ORDER BY (seq DESC)`);

  const insert = `INSERT INTO ${keyspace}.messages (conv, seq, body, sent) VALUES (?, ?, ?, ?)`;
  const sent = new Date("2025-01-02T03:04:05.678Z");
  for (let seq = 1; seq <= 3; seq++) {
    await client.execute(insert, ["g1", cassandra.types.Long.fromNumber(seq), Buffer.from(`body-${seq}`), sent], { prepare: true });
  }
  await client.execute(insert, ["g2", cassandra.types.Long.fromNumber(1), Buffer.from("other"), sent], { prepare: true });

  const rs = await client.execute(`SELECT seq, body, sent FROM ${keyspace}.messages WHERE conv = ?`, ["g1"], { prepare: true });
  assert.deepEqual(
    rs.rows.map((r) => [(r.get("seq") as cassandra.types.Long).toNumber(), (r.get("body") as Buffer).toString("utf8"), (r.get("sent") as Date).toISOString()]),
    [
      [3, "body-3", sent.toISOString()],
      [2, "body-2", sent.toISOString()],
      [1, "body-1", sent.toISOString()],
    ],
  );
});

test("cassandra: uniqueKeyspace gives distinct valid unquoted names", () => {
  const names = ["harness test", "9-lives", "", "x".repeat(100), "Msg.Store"].map(uniqueKeyspace);
  names.push(uniqueKeyspace("harness test"));
  for (const n of names) {
    assert.match(n, /^[a-z][a-z0-9_]*$/, n);
    assert.ok(n.length <= 48, n);
  }
  assert.equal(new Set(names).size, names.length);
  assert.ok(keyspace.startsWith("harness_test_"), keyspace);
});
