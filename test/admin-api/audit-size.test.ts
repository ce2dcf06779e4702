import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { stat } from "node:fs/promises";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { AUDIT_ARGUMENTS_MAX_BYTES, AUDIT_ARRAY_MAX } from "../../server/audit.js";
import { rejected } from "./helpers.js";
import { startReliabilityServer, type ReliabilityServer } from "../reliability/server.js";

/**
 * Every call that reaches a handler or is refused is audited with its arguments, and any
 * certificate holder can send requests up to the 4 MiB receive limit — a viewer's refused
 * AddMembers of 100,000 users included. Recorded in full, five such calls made the default
 * `audit tail` (50 entries) larger than a client accepts (16 MiB): RESOURCE_EXHAUSTED for everyone,
 * and 4 MiB more audit file per call. The audit records a bounded summary of the arguments.
 */
describe("audit entries of huge requests", () => {
  let rs: ReliabilityServer;
  before(async () => { rs = await startReliabilityServer("single"); });
  after(async () => { await rs?.close(); });

  it("stay small: a viewer's refused 4 MiB calls leave `audit tail` readable", async () => {
    const viewer = rs.connect("viewer");
    const admin = rs.connect("admin");
    const tenant = randomUUID();
    const group = randomUUID();
    const sizeBefore = (await stat(rs.server.audit.path)).size;
    for (let i = 0; i < 5; i++) {
      const users = Array.from({ length: 100_000 }, () => randomUUID());
      const err = await rejected(viewer.addMembers({ tenant, group, users, dryRun: false }));
      assert.equal(err.code, grpc.status.PERMISSION_DENIED);
    }
    const err = await rejected(admin.sendMessage({ tenant, group, sender: randomUUID(), text: "\u0000".repeat(60_000), clientMessageId: "", mentions: [] }));
    assert.equal(err.code, grpc.status.NOT_FOUND, "no such group (an admin sending as a user is told which)");
    const grown = (await stat(rs.server.audit.path)).size - sizeBefore;
    assert.ok(grown < 6 * (AUDIT_ARGUMENTS_MAX_BYTES + 16 * 1024), `6 audit entries took ${grown} bytes`);

    const tail = await admin.tailAudit({ limit: 50 });
    const refusals = tail.entries.filter((e) => e.rpc.endsWith("/AddMembers") && e.result === "PERMISSION_DENIED");
    assert.equal(refusals.length, 5);
    const args = JSON.parse(refusals[0]!.argumentsJson) as { tenant: string; group: string; users: string[] };
    assert.equal(args.tenant, tenant, "short fields are recorded as sent");
    assert.equal(args.group, group);
    assert.equal(args.users.length, AUDIT_ARRAY_MAX + 1, "the first AUDIT_ARRAY_MAX users and how many more there were");
    assert.match(args.users[AUDIT_ARRAY_MAX]!, new RegExp(`\\+${100_000 - AUDIT_ARRAY_MAX} more`));
  });
});
