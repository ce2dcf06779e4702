/**
 * CMD_STALE_OWNER end to end through the one mapping of each layer: the admin API answers a
 * CmdStaleOwnerError (and a fenced state write) with gRPC UNAVAILABLE and the domain code, and
 * qimctl turns that reply into exit 5 (connection: retryable) keeping the code.
 */
import { it } from "node:test";
import assert from "node:assert/strict";
import { status } from "@grpc/grpc-js";
import { CmdFencedError, CmdStaleOwnerError } from "../../../core/index.js";
import { mapError, toServiceError } from "../../../admin-api/errors.js";
import { classifyError } from "../../../cli/exit-codes.js";

it("CmdStaleOwnerError and CmdFencedError: gRPC UNAVAILABLE with code CMD_STALE_OWNER, qimctl exit 5", () => {
  for (const err of [new CmdStaleOwnerError(), new CmdFencedError(17)]) {
    const mapped = mapError(err, "req-1");
    assert.equal(mapped.code, status.UNAVAILABLE);
    assert.equal(mapped.domainCode, "CMD_STALE_OWNER");
    const wire = toServiceError(mapped, "req-1");
    const f = classifyError(Object.assign(new Error(`${wire.code} ${wire.details}`), wire));
    assert.equal(f.exitCode, 5);
    assert.equal(f.code, "CMD_STALE_OWNER");
  }
  assert.match(new CmdStaleOwnerError().message, /owned by another node/);
  assert.match(new CmdFencedError(17).message, /slot 17/);
});
