/**
 * The Cassandra authority's scenarios, parametrised by the node and role they run as: the plain
 * shared node (authority-cassandra.test.ts) and a node with authentication, authorisation and
 * TLS with client certificates (authority-cassandra-secure.test.ts) pass the same tests.
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { CassandraAuthority, OutboxRelay, newUuid, type CassandraOptions, type DispatchRecord, type RegistrationItem } from "../../core/index.js";
import { uniqueKeyspace } from "../harness/cassandra.js";
import { useEngine } from "./fixture.js";
import { acceptance5, drillCatchesCorruption, newStack, registrationCrash } from "./projection-scenarios.js";

/** Connection settings of the authority under test, all but the keyspace (known once the node runs). */
export type CassandraConnection = Omit<CassandraOptions, "keyspace" | "now">;

/**
 * Registers the scenarios. `connection` is called inside the tests, after the caller's `before`
 * hooks have started the node. `lines` (optional) receives every log line of the stacks under test.
 */
export function cassandraAuthorityScenarios(connection: () => CassandraConnection, lines: string[] = []): void {
  const opened: CassandraAuthority[] = [];
  after(async () => {
    await Promise.all(opened.map((a) => a.close()));
  });

  /** One keyspace per test: the stack under test and the test's own checks see the same rows. */
  function authorityIn(keyspace: string): CassandraAuthority {
    const a = new CassandraAuthority({ consistency: "LOCAL_QUORUM", ...connection(), keyspace });
    opened.push(a);
    return a;
  }

  describe("CassandraAuthority on a real Cassandra", () => {
    it("init is idempotent; register reads back; a repeat keeps the first first_seen_at; remove deletes", async () => {
      const keyspace = uniqueKeyspace("ucs");
      const a = authorityIn(keyspace);
      await a.init();
      await a.init();
      const tenant = newUuid();
      const user = newUuid();
      const convs = [newUuid(), newUuid(), newUuid()];
      const items: RegistrationItem[] = convs.map((conversation, i) => ({ tenant, user, conversation, kind: "group", firstSeenAt: 1_700_000_000_000 + i }));
      await a.register(items);
      await a.register([{ ...items[0]!, firstSeenAt: 1_800_000_000_000 }, items[1]!]);
      const rows = await a.conversations(tenant, user);
      assert.deepEqual(rows.map((r) => [r.conversation, r.kind, r.firstSeenAt]).sort(),
        items.map((i) => [i.conversation, "group", i.firstSeenAt]).sort());
      assert.ok(rows.every((r) => r.updatedAt > 0));
      assert.deepEqual(await a.conversations(tenant, newUuid()), [], "another user's partition is empty");
      await a.remove(tenant, user, [convs[0]!]);
      assert.deepEqual((await a.conversations(tenant, user)).map((r) => r.conversation).sort(), convs.slice(1).sort());
      // a second client on the same keyspace (another server) sees the same rows
      const b = authorityIn(keyspace);
      await b.init();
      assert.equal((await b.conversations(tenant, user)).length, 2);
    });
  });

  describe("session projection on the Cassandra authority", () => {
    const fx = useEngine("single");

    it("acceptance 5: cleared projection + checkpoint over the window → same set and definitional unread", async () => {
      const keyspace = uniqueKeyspace("acc5");
      const { stack } = await acceptance5(fx, () => authorityIn(keyspace));
      await stack.stop();
    });

    it("regression: the low-latency path arriving first registers exactly once, and Cassandra reads it back", async () => {
      const authority = authorityIn(uniqueKeyspace("lowlat"));
      const stack = newStack(fx, authority, lines);
      await stack.start();
      const tenant = fx.tenant();
      const owner = newUuid();
      const members = [newUuid(), newUuid(), newUuid()];
      const { group } = await fx.engine.createGroup({ tenant, owner, members });
      for (let i = 0; i < 4; i++) await fx.engine.send({ tenant, group, sender: members[i % 3]!, text: `m${i}` });
      const captured: DispatchRecord[] = [];
      await new OutboxRelay(fx.store, fx.engine.keys, fx.log, { onAppended: (r) => { captured.push(...r); } }).drainAll();
      await stack.lowLatency(captured);
      await stack.projector.catchUp();
      await stack.lowLatency(captured);
      assert.equal(await stack.registration.drainAll(), 4, "one registration per member, not per message or per path");
      for (const user of [owner, ...members]) {
        const rows = await authority.conversations(tenant, user);
        assert.deepEqual(rows.map((r) => r.conversation), [group]);
        assert.ok(rows[0]!.firstSeenAt > 0);
      }
      await stack.stop();
    });

    it("a registration task SIGKILLed between the Cassandra write and the pop loses and duplicates nothing", async () => {
      const keyspace = uniqueKeyspace("crash");
      await registrationCrash(fx, () => authorityIn(keyspace), { ...connection(), keyspace });
    });

    it("the rebuild drill on Cassandra: clean run reports nothing; a deleted row is named", async () => {
      const keyspace = uniqueKeyspace("drill");
      // other tests of this file registered their users in other keyspaces: name the users
      await drillCatchesCorruption(fx, () => authorityIn(keyspace), false);
    });
  });
}
