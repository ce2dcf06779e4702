import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { mustConfirm, type Destructive } from "../../cli/confirm.js";
import { UsageError } from "../../cli/exit-codes.js";

const remove: Destructive = { action: "remove members", exceptWith: "dry-run" };
const purge: Destructive = { action: "purge the dev stack's data", onlyWith: "purge" };

describe("the --yes rule of destructive commands (cli/confirm.ts)", () => {
  it("a command that declares nothing never asks", () => {
    assert.equal(mustConfirm(undefined, {}, false), false);
    assert.equal(mustConfirm(undefined, {}, true), false);
  });

  it("on a terminal it asks unless --yes or the invocation changes nothing", () => {
    assert.equal(mustConfirm(remove, {}, true), true);
    assert.equal(mustConfirm(remove, { yes: true }, true), false);
    assert.equal(mustConfirm(remove, { "dry-run": true }, true), false);
    assert.equal(mustConfirm(purge, { purge: true }, true), true);
    assert.equal(mustConfirm(purge, { purge: false }, true), false);
  });

  it("without a terminal: --yes, a dry run or a harmless invocation go ahead; anything else is a usage error naming --yes", () => {
    assert.equal(mustConfirm(remove, { yes: true }, false), false);
    assert.equal(mustConfirm(remove, { "dry-run": true }, false), false);
    assert.equal(mustConfirm(purge, {}, false), false);
    for (const [d, flags] of [[remove, {}], [purge, { purge: true }]] as const) {
      assert.throws(
        () => mustConfirm(d, flags, false),
        (e: unknown) => e instanceof UsageError && e.field === "--yes" && e.message.includes(`pass --yes to ${d.action}`),
      );
    }
  });
});
