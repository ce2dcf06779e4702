/**
 * STALE_OWNER end to end through the one mapping of each layer (CMD_STALE_OWNER was merged into it:
 * one error, one code): the admin API answers core's StaleOwnerError — the CMD sync's "user's slot
 * is another node's", a fenced CMD state write, and the node router's "ownership is moving" after
 * its one re-resolve — with gRPC UNAVAILABLE and the domain code STALE_OWNER; qimctl turns that
 * reply into exit 5 (connection: retryable) keeping the code; the HTTP API answers 503 with
 * Retry-After. The expected numbers are the documented ones (docs/operator-guide.md "Exit codes").
 */
import { it } from "node:test";
import assert from "node:assert/strict";
import { status } from "@grpc/grpc-js";
import { CmdFencedError, ERROR_CODES, StaleOwnerError } from "../../../core/index.js";
import { cmdHttpError } from "../../../server/listeners/app-http/cmd-http.js";
import { mapError, toServiceError } from "../../../server/pipeline/errors.js";
import { classifyError } from "../../../cli/exit-codes.js";

it("StaleOwnerError and CmdFencedError: gRPC UNAVAILABLE with code STALE_OWNER, qimctl exit 5, HTTP 503 + Retry-After", () => {
  const moving = new StaleOwnerError("slot 3: ownership is moving (asked n1, then n2: each answered stale owner); nothing was applied, retry", { kind: "slot", unit: 3, tried: ["n1", "n2"] });
  for (const err of [new StaleOwnerError(), new CmdFencedError(17), moving]) {
    assert.ok(err instanceof StaleOwnerError);
    const mapped = mapError(err, "req-1");
    assert.equal(mapped.code, status.UNAVAILABLE);
    assert.equal(mapped.domainCode, "STALE_OWNER");
    const wire = toServiceError(mapped, "req-1");
    const f = classifyError(Object.assign(new Error(`${wire.code} ${wire.details}`), wire));
    assert.equal(f.exitCode, 5);
    assert.equal(f.code, "STALE_OWNER");
    const http = cmdHttpError(err, "req-1");
    assert.equal(http.status, 503);
    assert.equal(http.body.code, "STALE_OWNER");
    assert.equal(http.retryAfterS, 1);
  }
  assert.match(new CmdFencedError(17).message, /slot 17/);
});

it("CMD_STALE_OWNER is gone: one code for a stale owner; a reply naming it from an older server still exits 5 by its gRPC status", () => {
  assert.equal(Object.hasOwn(ERROR_CODES, "CMD_STALE_OWNER"), false);
  const old = Object.assign(new Error("14 UNAVAILABLE: the user's slot is owned by another node"), toServiceError({ code: status.UNAVAILABLE, domainCode: "UNAVAILABLE", message: "the user's slot is owned by another node" }, "req-2"));
  old.metadata!.set("qim-error-code", "CMD_STALE_OWNER");
  const f = classifyError(old);
  assert.equal(f.exitCode, 5);
});
