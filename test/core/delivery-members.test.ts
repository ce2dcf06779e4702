/**
 * Issue 27: a large group's message is pushed from one members record, whose audience each node
 * finds among its own connections (MembersAudience). Checked against a history the test makes and
 * works out by hand (ADR-0021's visible interval (joined_at, left_at)): five members removed by the
 * event at seq 1, a message at seq 2, five newcomers joined by the event at seq 3, a message at 4.
 * Both ways of reading are taken — the connected users' entries (few connected) and a scan of the
 * group (more connected than one call reads and than the group has entries) — and must give the
 * same sets.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LocalConnections, MembersAudience, newUuid, TRANSIENT_SEQ, type DeviceConnection, type Uuid } from "../../core/index.js";
import { registry } from "../../core/metrics/index.js";
import { useEngine } from "./fixture.js";

const connection = (tenant: Uuid, user: Uuid): DeviceConnection => ({
  tenant, user, device: "d", since: 0, remote: "test", framesIn: 0, framesOut: 0, buffered: 0,
  push: () => true, pushEvent: () => true, pushConversationEvent: () => true, close: () => undefined, kick: () => undefined, reconnect: () => undefined,
});

const reads = async (how: string): Promise<number> => {
  const m = (await registry.getSingleMetric("qim_delivery_member_reads_total")?.get())?.values.find((v) => v.labels.how === how);
  return m?.value ?? 0;
};

describe("a members record's audience among a node's connections", () => {
  const fx = useEngine("single");

  it("exactly the members visible at each seq, read either way: the connected users' entries or a scan of the group", async () => {
    const tenant = fx.tenant();
    const owner = newUuid();
    const stay = Array.from({ length: 30 }, () => newUuid());
    const leave = Array.from({ length: 5 }, () => newUuid());
    const come = Array.from({ length: 5 }, () => newUuid());
    const strangers = Array.from({ length: 3 }, () => newUuid());
    const { group } = await fx.engine.createGroup({ tenant, owner, members: [...stay, ...leave] });
    assert.equal((await fx.engine.removeMembers({ tenant, group, users: leave })).eventConversationSeq, 1);
    assert.equal((await fx.engine.send({ tenant, group, sender: owner, text: "two" })).conversationSeq, 2);
    assert.equal((await fx.engine.addMembers({ tenant, group, users: come })).eventConversationSeq, 3);
    assert.equal((await fx.engine.send({ tenant, group, sender: owner, text: "four" })).conversationSeq, 4);

    const local = new LocalConnections();
    // connected here: the owner, 10 who stayed, 2 who left, 2 newcomers, the strangers; and another tenant's user
    const connected = [owner, ...stay.slice(0, 10), ...leave.slice(0, 2), ...come.slice(0, 2), ...strangers];
    for (const u of connected) local.add(connection(tenant, u));
    local.add(connection(newUuid(), stay[11]!));
    // by hand: seqs 1 and 2 — the owner and those who stayed (the removed ones' interval ends at 1);
    // seq 4 — those and the newcomers (joined_at 2 < 4); seq 3 is the join itself (joined_at = 3 - 1 = 2 < 3)
    const before = [owner, ...stay.slice(0, 10)].sort();
    const after = [...before, ...come.slice(0, 2)].sort();
    const want = [before, before, after, after];

    const audience = new MembersAudience(fx.store, fx.engine.keys, local);
    const sortAll = (xs: Uuid[][]) => xs.map((x) => [...x].sort());
    const hm = await reads("connected");
    assert.deepEqual(sortAll(await audience.resolve(tenant, group, [1, 2, 3, 4])), want, "18 connected, 41 entries: their entries");
    // a message in no log (an ephemeral type's, TRANSIENT_SEQ): the members now — as at seq 4, the removed ones out, the newcomers in
    assert.deepEqual(sortAll(await audience.resolve(tenant, group, [TRANSIENT_SEQ])), [after], "the ACTIVE members now");
    assert.equal(await reads("connected") - hm, connected.length, "one read per connected user of the tenant");

    // more connected users than one call reads (1,000) and than the group has entries: a scan of the group, the same answer
    for (let i = 0; i < 1000; i++) local.add(connection(tenant, newUuid()));
    const sc = await reads("members");
    // (a node of its own: this one keeps what it read above, and would read the newcomers only)
    const scanning = new MembersAudience(fx.store, fx.engine.keys, local);
    assert.deepEqual(sortAll(await scanning.resolve(tenant, group, [1, 2, 3, 4])), want, "1,018 connected, 41 entries: a scan");
    assert.ok(await reads("members") - sc >= 41, "every entry scanned");
    // nobody of the tenant here: nothing read
    assert.deepEqual(await new MembersAudience(fx.store, fx.engine.keys, new LocalConnections()).resolve(tenant, group, [2]), [[]]);
  });

  it("the entries are kept while the member version stays: the next message reads none, a user who connected since is read alone, a membership change reads them again", async () => {
    const tenant = fx.tenant();
    const owner = newUuid();
    const members = Array.from({ length: 20 }, () => newUuid());
    const { group } = await fx.engine.createGroup({ tenant, owner, members });
    const local = new LocalConnections();
    for (const u of [owner, ...members.slice(0, 10)]) local.add(connection(tenant, u));
    const audience = new MembersAudience(fx.store, fx.engine.keys, local);
    const sorted = (xs: Uuid[][]) => xs.map((x) => [...x].sort());

    let before = await reads("connected");
    assert.deepEqual(sorted(await audience.resolve(tenant, group, [1])), [[owner, ...members.slice(0, 10)].sort()]);
    assert.equal(await reads("connected") - before, 11, "the first message reads the 11 connected users' entries");
    before = await reads("connected");
    assert.deepEqual(sorted(await audience.resolve(tenant, group, [2])), [[owner, ...members.slice(0, 10)].sort()]);
    assert.equal(await reads("connected") - before, 0, "the next one, at the same member version, reads none");
    // members[10] connects: read alone
    local.add(connection(tenant, members[10]!));
    before = await reads("connected");
    assert.deepEqual(sorted(await audience.resolve(tenant, group, [3])), [[owner, ...members.slice(0, 11)].sort()]);
    assert.equal(await reads("connected") - before, 1);
    // a membership change (members[0] removed at seq 1 of the history: its first event) moves the version: read again
    const removed = await fx.engine.removeMembers({ tenant, group, users: [members[0]!] });
    before = await reads("connected");
    const at = removed.eventConversationSeq! + 1;
    assert.deepEqual(sorted(await audience.resolve(tenant, group, [at])), [[owner, ...members.slice(1, 11)].sort()], "the removed member is out after their left_at");
    assert.equal(await reads("connected") - before, 12);
  });
});
