import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { InvalidArgumentError } from "../../core/index.js";
import { parseReason } from "../../core/index.js";
import { outputModeFromArgv } from "../../cli/base.js";
import { UsageError } from "../../cli/exit-codes.js";
import { table } from "../../cli/format.js";
import type { MembershipChangeResult } from "../../cli/membership/results.js";
import { describeMembershipChange } from "../../cli/membership/text.js";
import { endpoint, LIMITS, optionalUuidList, reason, seconds, text, uuid, uuidList } from "../../cli/validate.js";

const U1 = "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b";
const U2 = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";

function usage(fn: () => unknown, field: string): void {
  assert.throws(fn, (e: unknown) => e instanceof UsageError && e.field === field && e.message.startsWith(`${field}: `));
}

describe("local validation", () => {
  it("UUIDs: canonical 8-4-4-4-12, any case in, lowercase out", () => {
    assert.equal(uuid("--group", U1.toUpperCase()), U1);
    assert.equal(uuid("--group", ` ${U1} `), U1);
    usage(() => uuid("--group", "not-a-uuid"), "--group");
    usage(() => uuid("--group", U1.replace(/-/g, "")), "--group");
    usage(() => uuid("--group", `${U1}0`), "--group");
    usage(() => uuid("--group", ""), "--group");
    usage(() => uuid("--group", undefined), "--group");
    // only ASCII blanks are trimmed: a BOM or a no-break space pasted with the id is refused
    assert.equal(uuid("--group", `\t${U1}`), U1);
    usage(() => uuid("--group", `\uFEFF${U1}`), "--group");
    usage(() => uuid("--group", `${U1}\u00A0`), "--group");
  });

  it("UUID lists: non-empty, deduplicated in order, at most the API's limit", () => {
    assert.deepEqual(uuidList("--user", [U2, U1, U2.toUpperCase()], 2), [U2, U1]);
    usage(() => uuidList("--user", [], 10), "--user");
    usage(() => uuidList("--user", undefined, 10), "--user");
    usage(() => uuidList("--user", [U1, "bad"], 10), "--user");
    usage(() => uuidList("--user", [U1, U2], 1), "--user");
    const many = Array.from({ length: LIMITS.usersPerChange + 1 }, (_, i) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, "0")}`);
    usage(() => uuidList("--user", many, LIMITS.usersPerChange), "--user");
    assert.equal(uuidList("--user", many.slice(1), LIMITS.usersPerChange).length, LIMITS.usersPerChange);
    assert.deepEqual(optionalUuidList("--member", undefined, 10), []);
  });

  it("endpoints are host:port", () => {
    assert.equal(endpoint("--endpoint", "localhost:7443"), "localhost:7443");
    assert.equal(endpoint("--endpoint", "[::1]:7443"), "[::1]:7443");
    assert.equal(endpoint("--endpoint", "dns:qim.internal:443"), "qim.internal:443");
    for (const bad of ["localhost", "localhost:0", "localhost:70000", "a b:1", ":7443", "http://x:1"]) usage(() => endpoint("--endpoint", bad), "--endpoint");
    assert.throws(() => endpoint("--endpoint", undefined), /no server endpoint/);
  });

  it("text and timeouts", () => {
    assert.equal(text("--text", "héllo", 6), "héllo");
    usage(() => text("--text", "héllo", 5), "--text");
    usage(() => text("--text", "", 5), "--text");
    assert.equal(seconds("--timeout", "15"), 15_000);
    assert.equal(seconds("--timeout", "0.25"), 250);
    for (const bad of ["0", "-1", "abc", "1e3", "99999"]) usage(() => seconds("--timeout", bad), "--timeout");
  });

  it("the output mode is read from argv before parsing, last one wins, stops at --", () => {
    assert.equal(outputModeFromArgv([]), "table");
    assert.equal(outputModeFromArgv(["group", "show", "--json"]), "json");
    assert.equal(outputModeFromArgv(["--output", "json"]), "json");
    assert.equal(outputModeFromArgv(["--output=json"]), "json");
    assert.equal(outputModeFromArgv(["-o", "json"]), "json");
    assert.equal(outputModeFromArgv(["-ojson"]), "json");
    assert.equal(outputModeFromArgv(["--json", "--output", "table"]), "table");
    assert.equal(outputModeFromArgv(["--", "--json"]), "table");
  });
});

describe("table mode text", () => {
  const base: MembershipChangeResult = {
    group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39", op: "join", outcome: "committed", changed: [U1, U2], eventConversationSeq: 7, messageId: "m",
    version: 3, memberCount: 5, idempotencyId: "ab".repeat(16), audienceSize: 5, attempts: 1,
  };

  it("a change is one sentence with ids", () => {
    const line = describeMembershipChange(base);
    assert.equal(line.split("\n").length, 1);
    assert.match(line, /^Added 2 member\(s\) to group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39: event seq 7, version 3, 5 members/);
    assert.match(describeMembershipChange({ ...base, op: "remove" }), /^Removed 2 member\(s\) from group /);
  });

  it("a re-run says nothing changed", () => {
    assert.match(describeMembershipChange({ ...base, outcome: "duplicate" }), /^Nothing changed: this change was already committed .* as event seq 7/);
    assert.match(describeMembershipChange({ ...base, outcome: "noop", changed: [], eventConversationSeq: null }), /^Nothing changed: every user is already a member/);
  });

  it("a dry run prints the plan: targets, audience size, idempotency id", () => {
    const plan = describeMembershipChange({ ...base, outcome: "planned", eventConversationSeq: null });
    assert.match(plan, /^Dry run: would add 2 member\(s\) to group .* at version 3; nothing written/);
    assert.match(plan, new RegExp(`targets: +${U1}, ${U2}`));
    assert.match(plan, /audience size: +5/);
    assert.match(plan, new RegExp(`idempotency id: +${"ab".repeat(16)}`));
  });

  it("reasons: one line of text; controls, separators and bidirectional formatting refused", () => {
    assert.equal(reason("--reason", "  restored redis-3 from the 02:00 snapshot ", true), "restored redis-3 from the 02:00 snapshot");
    assert.equal(reason("--reason", "réindexé — 東京", true), "réindexé — 東京");
    assert.equal(reason("--reason", undefined, false), undefined);
    usage(() => reason("--reason", " ", true), "--reason");
    usage(() => reason("--reason", "x".repeat(LIMITS.reasonChars + 1), true), "--reason");
    for (const bad of ["two\nlines", "a\u001b[31mb", "a\u0085b", "a\u2028b", "a\u2029b", "restored \u202Egnp.kcatta", "a\u2066b\u2069", "a\u200Fb"]) {
      usage(() => reason("--reason", bad, true), "--reason");
    }
  });

  it("reasons: the CLI refuses exactly what the server refuses (core parseReason), with the server's words after the flag", () => {
    const samples = ["", " ", "ok", "x".repeat(LIMITS.reasonChars), "é".repeat(LIMITS.reasonChars + 1), "two\nlines", "a\u0085b", "\u00a0nbsp"];
    for (const required of [true, false]) {
      for (const s of samples) {
        let server: string | undefined;
        try {
          server = parseReason(s, "reason", { required });
        } catch (err) {
          assert.ok(err instanceof InvalidArgumentError && err.field === "reason");
          assert.throws(() => reason("--drill-reason", s, required), (e: unknown) => e instanceof UsageError && e.message === `--drill-reason: ${err.message}`);
          continue;
        }
        assert.equal(reason("--drill-reason", s, required), server === "" ? undefined : server);
      }
    }
    assert.throws(() => reason("--reason", "x".repeat(LIMITS.reasonChars + 1), true), { message: `--reason: reason is at most ${LIMITS.reasonChars} characters, got ${LIMITS.reasonChars + 1}` });
  });

  it("tables align columns and show absent values as -", () => {
    assert.equal(table(["A", "LONGER"], [["x", null], ["yyyy", 2]]), "A     LONGER\nx     -\nyyyy  2");
  });
});
