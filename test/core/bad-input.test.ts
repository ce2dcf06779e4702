import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  PermissionDeniedError,
  VersionConflictError,
  type QimError,
} from "../../core/index.js";
import { ALL_TOPOLOGIES } from "../harness/redis.js";
import { useEngine } from "./fixture.js";
import { newUuid, type Uuid } from "../../core/index.js";

for (const kind of ALL_TOPOLOGIES) {
  describe(`bad input changes nothing, on ${kind}`, () => {
    const fx = useEngine(kind, { maxTargetsPerCall: 50 });

    async function seeded() {
      const tenant = fx.tenant();
      const owner = newUuid();
      const member = newUuid();
      const { group } = await fx.engine.createGroup({ tenant, owner, members: [member] });
      await fx.engine.send({ tenant, group, sender: member, text: "hello" });
      await fx.engine.addMembers({ tenant, group, users: [newUuid()] });
      return { tenant, group, owner, member };
    }

    /** Runs `call`, expects the error class (and field), and proves the group's keys are unchanged. */
    async function refusedUnchanged(
      g: { tenant: Uuid; group: Uuid },
      call: () => Promise<unknown>,
      errorClass: new (...a: never[]) => QimError,
      field?: string,
    ) {
      const before = await fx.digest(g.tenant, g.group);
      const err = await call().then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof errorClass, `expected ${errorClass.name}, got ${String(err)}`);
      if (field !== undefined) assert.equal((err as InvalidArgumentError).field, field);
      assert.equal(await fx.digest(g.tenant, g.group), before);
    }

    it("invalid UUIDs are INVALID_ARGUMENT naming the field", async () => {
      const g = await seeded();
      await refusedUnchanged(g, () => fx.engine.addMembers({ ...g, users: ["not-a-uuid"] }), InvalidArgumentError, "users[0]");
      await refusedUnchanged(g, () => fx.engine.addMembers({ ...g, users: [newUuid(), "123"] }), InvalidArgumentError, "users[1]");
      await refusedUnchanged(g, () => fx.engine.removeMembers({ tenant: "x", group: g.group, users: [g.member] }), InvalidArgumentError, "tenant");
      await refusedUnchanged(g, () => fx.engine.removeMembers({ tenant: g.tenant, group: "", users: [g.member] }), InvalidArgumentError, "group");
      await refusedUnchanged(g, () => fx.engine.send({ ...g, sender: "\u0000\u00ff", text: "x" }), InvalidArgumentError, "sender");
      await refusedUnchanged(g, () => fx.engine.history({ ...g, user: "zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz" }), InvalidArgumentError, "user");
      await refusedUnchanged(g, () => fx.engine.addMembers({ ...g, users: [42 as unknown as string] }), InvalidArgumentError, "users[0]");
    });

    it("an empty target list is INVALID_ARGUMENT; a list of only repeats of one user is that one user", async () => {
      const g = await seeded();
      await refusedUnchanged(g, () => fx.engine.addMembers({ ...g, users: [] }), InvalidArgumentError, "users");
      await refusedUnchanged(g, () => fx.engine.removeMembers({ ...g, users: undefined as unknown as string[] }), InvalidArgumentError, "users");
      const before = await fx.digest(g.tenant, g.group);
      const r = await fx.engine.addMembers({ ...g, users: [g.member, g.member.toUpperCase(), g.member] });
      assert.equal(r.outcome, "noop");
      assert.deepEqual(r.changed, []);
      assert.equal(r.eventConversationSeq, null);
      assert.equal(await fx.digest(g.tenant, g.group), before);
    });

    it("more distinct targets than the per-call limit is INVALID_ARGUMENT", async () => {
      const g = await seeded();
      const many = Array.from({ length: 51 }, () => newUuid());
      await refusedUnchanged(g, () => fx.engine.addMembers({ ...g, users: many }), InvalidArgumentError, "users");
      const r = await fx.engine.addMembers({ ...g, users: many.slice(0, 50), dryRun: true });
      assert.equal(r.outcome, "planned");
      assert.equal(r.changed.length, 50);
    });

    it("an unknown group is NOT_FOUND on the admin path and changes nothing", async () => {
      const g = await seeded();
      const missing = { tenant: g.tenant, group: newUuid() };
      await refusedUnchanged(missing, () => fx.engine.addMembers({ ...missing, users: [newUuid()] }), NotFoundError);
      await refusedUnchanged(missing, () => fx.engine.removeMembers({ ...missing, users: [newUuid()] }), NotFoundError);
      await refusedUnchanged(missing, () => fx.engine.listMembers(missing), NotFoundError);
      await refusedUnchanged(missing, () => fx.engine.getGroup(missing.tenant, missing.group), NotFoundError);
      await refusedUnchanged(missing, () => fx.engine.send({ ...missing, sender: newUuid(), text: "x" }), PermissionDeniedError);
    });

    it("removing non-members plans nothing and commits nothing", async () => {
      const g = await seeded();
      const before = await fx.digest(g.tenant, g.group);
      const r = await fx.engine.removeMembers({ ...g, users: [newUuid(), newUuid()] });
      assert.equal(r.outcome, "noop");
      assert.deepEqual(r.changed, []);
      assert.equal(r.memberCount, 3);
      assert.equal(await fx.digest(g.tenant, g.group), before);
    });

    it("a sender who is not a member is PERMISSION_DENIED", async () => {
      const g = await seeded();
      await refusedUnchanged(g, () => fx.engine.send({ ...g, sender: newUuid(), text: "x" }), PermissionDeniedError);
    });

    it("removing the owner is FAILED_PRECONDITION", async () => {
      const g = await seeded();
      await refusedUnchanged(g, () => fx.engine.removeMembers({ ...g, users: [g.owner, g.member] }), FailedPreconditionError);
      await refusedUnchanged(g, () => fx.engine.leaveGroup({ ...g, user: g.owner }), FailedPreconditionError);
    });

    it("a stale expectVersion is a VERSION_CONFLICT; dry-run writes nothing", async () => {
      const g = await seeded();
      await refusedUnchanged(g, () => fx.engine.addMembers({ ...g, users: [newUuid()], expectVersion: 1 }), VersionConflictError);
      await refusedUnchanged(g, () => fx.engine.addMembers({ ...g, users: [newUuid()], expectVersion: -3 }), InvalidArgumentError, "expectVersion");
      const before = await fx.digest(g.tenant, g.group);
      const plan = await fx.engine.removeMembers({ ...g, users: [g.member], dryRun: true });
      assert.equal(plan.outcome, "planned");
      assert.equal(plan.idempotencyId.length, 32);
      assert.equal(plan.audienceSize, 3);
      assert.equal(await fx.digest(g.tenant, g.group), before);
      const done = await fx.engine.removeMembers({ ...g, users: [g.member], expectVersion: plan.version });
      assert.equal(done.outcome, "committed");
      assert.equal(done.idempotencyId, plan.idempotencyId, "the dry-run names the id the commit uses");
    });

    it("empty, oversized or reserved message content is INVALID_ARGUMENT", async () => {
      const g = await seeded();
      await refusedUnchanged(g, () => fx.engine.send({ ...g, sender: g.member, text: "" }), InvalidArgumentError, "text");
      await refusedUnchanged(g, () => fx.engine.send({ ...g, sender: g.member }), InvalidArgumentError, "text");
      await refusedUnchanged(g, () => fx.engine.send({ ...g, sender: g.member, payload: new Uint8Array(64 * 1024 + 1) }), InvalidArgumentError, "payload");
      await refusedUnchanged(g, () => fx.engine.send({ ...g, sender: g.member, payload: new Uint8Array(1), contentType: "qim.membership.v1" }), InvalidArgumentError, "contentType");
      await refusedUnchanged(g, () => fx.engine.send({ ...g, sender: g.member, payload: new Uint8Array(1), contentType: "a|b" }), InvalidArgumentError, "contentType");
      await refusedUnchanged(g, () => fx.engine.history({ ...g, user: g.member, limit: 0 }), InvalidArgumentError, "limit");
      await refusedUnchanged(g, () => fx.engine.markRead({ ...g, user: g.member, seq: -1 }), InvalidArgumentError, "seq");
    });
  });
}
