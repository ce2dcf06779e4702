/**
 * The custom message type registry (issue 29, spec 003 §3) on a real redis-server: declarations
 * checked whole, changes with one version step (dry run, compare-and-set, prune, idempotent
 * re-apply), the reload bound on a second "node" with a hand-driven clock, and the send path
 * applying a declaration: undeclared and reserved types and oversized payloads refused with
 * nothing written, counts_unread=false never counting (unread worked out by hand), and sends
 * racing changes each under one version whole (checked against what the test applied).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  BUILT_IN_TYPES, FailedPreconditionError, InvalidArgumentError, MessageTypeRegistry, NotFoundError, parseDeclaration, RegistryVersionConflictError,
  decodeHistoryEntry, newUuid, type MessageTypeDeclaration, type RegistrySnapshot, type Uuid,
} from "../../../core/index.js";
import { useEngine } from "../fixture.js";

let registry: MessageTypeRegistry;
const fx = useEngine("single", { messageTypes: (tenant: Uuid): Promise<RegistrySnapshot> | RegistrySnapshot => registry.current(tenant) });
const reg = () => (registry ??= new MessageTypeRegistry(fx.store, fx.engine.keys));

const decl = (o: Record<string, unknown>): MessageTypeDeclaration => parseDeclaration(o, "test");

describe("message type declarations", () => {
  it("fill the spec's defaults and refuse unknown fields, engine names, and combinations the engine cannot honour", () => {
    assert.deepEqual(decl({ custom_type: "acme.poll.v1" }), {
      customType: "acme.poll.v1", schemaVersion: 1, deliveryClass: "persistent", countsUnread: true, affectsSessionOrder: true, timelineVisible: true,
      anchorMode: "own_seq", previewTemplate: "[message]", maxPayloadBytes: 32768, minimumClientVersion: "0.0.0",
    });
    const refused = (o: Record<string, unknown>, field: RegExp) => assert.throws(() => decl(o), (e: unknown) => e instanceof InvalidArgumentError && field.test(e.field));
    refused({ custom_type: "acme.poll.v1", counts_unred: false }, /counts_unred/);
    refused({ custom_type: "qim.membership.v1" }, /custom_type/);
    refused({ custom_type: "image/png" }, /custom_type/);
    refused({ custom_type: "Acme.Poll" }, /custom_type/);
    refused({ custom_type: "a".repeat(65) }, /custom_type/);
    refused({ custom_type: "acme.typing", delivery_class: "ephemeral" }, /counts_unread/);
    refused({ custom_type: "acme.typing", delivery_class: "ephemeral", counts_unread: false, affects_session_order: false }, /anchor_mode/);
    refused({ custom_type: "acme.poll.v1", anchor_mode: "anchor_target" }, /anchor_mode/);
    refused({ custom_type: "acme.poll.v1", max_payload_bytes: 32769 }, /max_payload_bytes/);
    refused({ custom_type: "acme.poll.v1", schema_version: 0 }, /schema_version/);
    refused({ custom_type: "acme.poll.v1", preview_template: "a\nb" }, /preview_template/);
    refused({ custom_type: "acme.poll.v1", minimum_client_version: "latest" }, /minimum_client_version/);
    refused({ custom_type: "acme.poll.v1", counts_unread: "no" }, /counts_unread/);
    // an ephemeral type: no seq, so nothing to count, order or anchor
    assert.equal(decl({ custom_type: "acme.typing", delivery_class: "ephemeral", counts_unread: false, affects_session_order: false, anchor_mode: "none" }).deliveryClass, "ephemeral");
  });
});

describe("registry changes", () => {
  it("apply with one version step, say what a dry run would do, refuse a stale version, keep the version when nothing changes, prune and delete", async () => {
    const r = reg();
    const tenant = fx.tenant();
    const empty = await r.read(tenant);
    assert.equal(empty.version, 0);
    assert.deepEqual([...empty.declared], []);
    assert.deepEqual([...empty.types.keys()].sort(), BUILT_IN_TYPES.map((d) => d.customType).sort(), "before any change: the built-ins only");

    const poll = decl({ custom_type: "acme.poll.v1", preview_template: "[poll]" });
    const note = decl({ custom_type: "acme.note.v1", counts_unread: false });
    const dry = await r.apply({ tenant, put: [poll, note], delete: [], dryRun: true });
    assert.deepEqual(dry.changes.map((c) => [c.customType, c.action]), [["acme.note.v1", "create"], ["acme.poll.v1", "create"]]);
    assert.deepEqual([dry.version, dry.changed, dry.dryRun], [0, false, true]);
    assert.equal((await r.read(tenant)).version, 0, "a dry run writes nothing");

    const first = await r.apply({ tenant, put: [poll, note], delete: [], expectVersion: 0 });
    assert.deepEqual([first.fromVersion, first.version, first.changed], [0, 1, true]);
    const again = await r.apply({ tenant, put: [poll, note], delete: [] });
    assert.deepEqual([again.version, again.changed, again.changes.map((c) => c.action)], [1, false, ["unchanged", "unchanged"]]);
    await assert.rejects(r.apply({ tenant, put: [poll], delete: [], expectVersion: 0 }), RegistryVersionConflictError);

    // an update names its fields; --prune deletes what the file leaves out; call_record is replaceable
    const poll2 = decl({ custom_type: "acme.poll.v1", preview_template: "[poll]", schema_version: 2, max_payload_bytes: 1000 });
    const calls = decl({ custom_type: "call_record", counts_unread: false, preview_template: "[call]" });
    const pruned = await r.apply({ tenant, put: [poll2, calls], delete: [], prune: true, expectVersion: 1 });
    assert.deepEqual(pruned.changes.map((c) => [c.customType, c.action, c.fields]), [
      ["acme.note.v1", "delete", []], ["acme.poll.v1", "update", ["schema_version", "max_payload_bytes"]], ["call_record", "create", []],
    ]);
    assert.equal(pruned.version, 2);
    const s = await r.read(tenant);
    assert.deepEqual([...s.declared].sort(), ["acme.poll.v1", "call_record"]);
    assert.equal(s.types.get("call_record")!.countsUnread, false, "the tenant's call_record replaces the built-in default");
    assert.equal((await r.get(tenant, "qim.recall.v1")).builtIn, true);

    await assert.rejects(r.apply({ tenant, put: [], delete: ["acme.note.v1"] }), NotFoundError, "deleting what is not declared");
    assert.equal((await r.apply({ tenant, put: [], delete: ["acme.note.v1"], ignoreMissing: true })).changed, false);
    await assert.rejects(r.apply({ tenant, put: [], delete: ["qim.membership.v1"] }), InvalidArgumentError);
    await assert.rejects(r.apply({ tenant, put: [poll, poll], delete: [] }), InvalidArgumentError, "one type twice in a change");
    await assert.rejects(r.apply({ tenant, put: [], delete: Array.from({ length: 257 }, (_, i) => `acme.x${i}`) }), (e: unknown) => e instanceof InvalidArgumentError && e.field === "delete", "more deletes than a tenant holds types");
    await assert.rejects(r.get(tenant, "acme.none"), NotFoundError);
    // deleting call_record brings the built-in default back
    await r.apply({ tenant, put: [], delete: ["call_record"] });
    assert.equal((await r.read(tenant)).types.get("call_record")!.countsUnread, true);
  });

  it("a second node uses a change for every send that starts registry_reload_interval after its last read, and reads nothing before", async () => {
    let t = 10_000;
    const nodeB = new MessageTypeRegistry(fx.store, fx.engine.keys, { reloadIntervalMs: 200, now: () => t });
    const tenant = fx.tenant();
    await reg().apply({ tenant, put: [decl({ custom_type: "acme.v", schema_version: 1 })], delete: [] });
    const v1 = await nodeB.current(tenant);
    assert.equal(v1.types.get("acme.v")!.schemaVersion, 1);
    await reg().apply({ tenant, put: [decl({ custom_type: "acme.v", schema_version: 2 })], delete: [] });
    t += 199;
    assert.equal(nodeB.current(tenant), v1, "inside the interval: the snapshot held, no read");
    t += 1;
    const v2 = await nodeB.current(tenant);
    assert.deepEqual([v2.version, v2.types.get("acme.v")!.schemaVersion], [v1.version + 1, 2], "at the interval: the new version, whole");
    t += 500;
    assert.equal(await nodeB.current(tenant), v2, "version unchanged: the same snapshot (one HGET, not the whole registry)");
  });
});

describe("the send path under a declaration", () => {
  it("refuses undeclared and reserved types, aggregates, ephemeral messages without a delivery module, and oversized payloads, writing nothing", async () => {
    const tenant = fx.tenant();
    const [a, b] = [newUuid(), newUuid()];
    const { group } = await fx.engine.createGroup({ tenant, owner: a, members: [b] });
    await reg().apply({ tenant, put: [
      decl({ custom_type: "acme.small", max_payload_bytes: 4 }),
      decl({ custom_type: "acme.typing", delivery_class: "ephemeral", counts_unread: false, affects_session_order: false, anchor_mode: "none" }),
      decl({ custom_type: "acme.react", delivery_class: "ephemeral_aggregate", counts_unread: false, affects_session_order: false, anchor_mode: "none" }),
    ], delete: [] });
    const before = await fx.digest(tenant, group);
    const send = (contentType: string, bytes: number) => fx.engine.send({ tenant, group, sender: a, payload: new Uint8Array(bytes), contentType });
    await assert.rejects(send("acme.unknown", 1), (e: unknown) => e instanceof InvalidArgumentError && /not a message type of this tenant/.test(e.message));
    await assert.rejects(send("qim.recall.v1", 1), (e: unknown) => e instanceof InvalidArgumentError && /engine's own/.test(e.message));
    await assert.rejects(send("acme.small", 5), (e: unknown) => e instanceof InvalidArgumentError && e.field === "payload" && /at most 4 bytes/.test(e.message));
    await assert.rejects(send("acme.typing", 1), (e: unknown) => e instanceof FailedPreconditionError && /no delivery module/.test(e.message));
    await assert.rejects(send("acme.react", 1), (e: unknown) => e instanceof FailedPreconditionError && /aggregates/.test(e.message));
    assert.equal(await fx.digest(tenant, group), before, "no refusal wrote anything or took a seq");
    // another tenant's declaration is not this tenant's
    const other = fx.tenant();
    const g2 = await fx.engine.createGroup({ tenant: other, owner: a, members: [b] });
    await assert.rejects(fx.engine.send({ tenant: other, group: g2.group, sender: a, payload: new Uint8Array(1), contentType: "acme.small" }), InvalidArgumentError);
    assert.equal((await send("acme.small", 4)).conversationSeq, 1, "at the limit: sent");
    // an edit keeps the type's limit
    await assert.rejects(fx.engine.edit({ tenant, group, seq: 1, user: a, payload: new Uint8Array(5) }), (e: unknown) => e instanceof InvalidArgumentError && /at most 4 bytes/.test(e.message));
    assert.equal((await fx.engine.edit({ tenant, group, seq: 1, user: a, payload: new Uint8Array(4) })).eventSeq, 2);
  });

  it("counts_unread false never counts: b's unread is what b's history says by hand", async () => {
    const tenant = fx.tenant();
    const [a, b] = [newUuid(), newUuid()];
    const { group } = await fx.engine.createGroup({ tenant, owner: a, members: [b] });
    await reg().apply({ tenant, put: [decl({ custom_type: "acme.note.v1", counts_unread: false, schema_version: 3, timeline_visible: false })], delete: [] });
    // a sends text, note, text, note, note: b's unread counts the two texts only
    for (const ct of ["text/plain", "acme.note.v1", "text/plain", "acme.note.v1", "acme.note.v1"]) await fx.engine.send({ tenant, group, sender: a, payload: new Uint8Array([1]), contentType: ct });
    const summary = await fx.engine.conversationSummary({ tenant, group, user: b });
    assert.deepEqual([summary.unread, summary.unreadExact], [2, true]);
    const page = await fx.engine.history({ tenant, group, user: b });
    assert.deepEqual(page.records.map((r) => [r.conversationSeq, r.countsUnread, r.custom ?? null]), [
      [1, true, null], [2, false, { registryVersion: 1, schemaVersion: 3, timelineVisible: false }], [3, true, null],
      [4, false, { registryVersion: 1, schemaVersion: 3, timelineVisible: false }], [5, false, { registryVersion: 1, schemaVersion: 3, timelineVisible: false }],
    ]);
  });

  it("a retry across a registry change is the first commit, not an idempotency conflict", async () => {
    const tenant = fx.tenant();
    const [a, b] = [newUuid(), newUuid()];
    const { group } = await fx.engine.createGroup({ tenant, owner: a, members: [b] });
    await reg().apply({ tenant, put: [decl({ custom_type: "acme.flip", counts_unread: true })], delete: [] });
    const clientMessageId = newUuid();
    const first = await fx.engine.send({ tenant, group, sender: a, payload: new Uint8Array([7]), contentType: "acme.flip", clientMessageId });
    await reg().apply({ tenant, put: [decl({ custom_type: "acme.flip", counts_unread: false, schema_version: 2 })], delete: [] });
    const retry = await fx.engine.send({ tenant, group, sender: a, payload: new Uint8Array([7]), contentType: "acme.flip", clientMessageId });
    assert.deepEqual([retry.duplicate, retry.conversationSeq, retry.messageId], [true, first.conversationSeq, first.messageId]);
  });

  it("sends racing changes each apply one version whole (every entry matches the declaration of the version it names)", async () => {
    const tenant = fx.tenant();
    const [a, b] = [newUuid(), newUuid()];
    const { group } = await fx.engine.createGroup({ tenant, owner: a, members: [b] });
    // what the test applied at each version: schema_version and counts_unread change together
    const applied = new Map<number, { schemaVersion: number; countsUnread: boolean }>();
    const change = async (i: number) => {
      const d = decl({ custom_type: "acme.race", schema_version: i, counts_unread: i % 2 === 0 });
      const r = await reg().apply({ tenant, put: [d], delete: [] });
      applied.set(r.version, { schemaVersion: i, countsUnread: i % 2 === 0 });
    };
    await change(1);
    // the changes one after another (two at once are a compare-and-set conflict, tested above), the sends meanwhile in waves of 5
    const sender = (async () => {
      for (let w = 0; w < 40; w++) {
        await Promise.all([0, 1, 2, 3, 4].map((i) => fx.engine.send({ tenant, group, sender: a, payload: new Uint8Array([(w * 5 + i) & 255]), contentType: "acme.race" })));
      }
    })();
    const changer = (async () => {
      for (let i = 2; i < 10; i++) await change(i);
    })();
    await Promise.all([sender, changer]);
    const k = fx.engine.conversationKeys(tenant, group);
    const entries = (await fx.store.clientFor(k.tag).zrange(k.hist, "0", "-1")).map(decodeHistoryEntry).filter((r) => r.contentType === "acme.race");
    assert.equal(entries.length, 200);
    const seen = new Set<number>();
    for (const e of entries) {
      const want = applied.get(e.custom!.registryVersion);
      assert.ok(want, `seq ${e.conversationSeq} names version ${e.custom!.registryVersion}, which the test applied`);
      assert.deepEqual({ schemaVersion: e.custom!.schemaVersion, countsUnread: e.countsUnread }, want, `seq ${e.conversationSeq}: one version's declaration whole`);
      seen.add(e.custom!.registryVersion);
    }
    assert.ok(seen.size >= 2, `the sends saw more than one version (${[...seen].join(", ")})`);
  });
});
