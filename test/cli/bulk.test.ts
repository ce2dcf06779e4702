/**
 * The local parts of `membership add|remove --from-file` (issue 14): reading the user list
 * (cli/membership/user-file.ts), cutting it into batches and running them (cli/membership/bulk.ts),
 * and the progress bar (cli/progress.ts). The end-to-end behaviour against a real server is in
 * test/e2e/membership-bulk.test.ts.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ChangeMembersRequest, MembershipChange } from "../../admin-api/client.js";
import { CONVERSATION_DEFAULTS, MAX_USERS_PER_MEMBERSHIP_CALL } from "../../core/index.js";
import { batchesOf, runBulk } from "../../cli/membership/bulk.js";
import { BAD_LINES_SHOWN, badLinesText, csvFields, FROM_FILE_MAX_BYTES, FROM_FILE_MAX_LINE_BYTES, InputTooLargeError, parseUserList, readBounded } from "../../cli/membership/user-file.js";
import { ProgressLine, progressBar } from "../../cli/progress.js";
import { LIMITS } from "../../cli/validate.js";

const id = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;

describe("the user list of --from-file", () => {
  it("one UUID per line: blank lines and # comments skipped, CRLF and a BOM accepted, any case in, sorted distinct out", () => {
    const l = parseUserList(`\uFEFF# onboarding\r\n${id(3)}\r\n\r\n  ${id(1).toUpperCase()}\t\r\n   # indented comment\r\n${id(2)}\r\n${id(1)}\r\n`);
    assert.equal(l.format, "list");
    assert.deepEqual(l.users, [id(1), id(2), id(3)]);
    assert.deepEqual([l.entries, l.duplicates, l.badCount, l.bad], [4, 1, 0, []]);
  });

  it("bad lines: every one counted with its line number, the first 20 shown", () => {
    const lines = [id(1), "", ...Array.from({ length: 30 }, (_, i) => `bad ${i}`), id(2)];
    const l = parseUserList(lines.join("\n"));
    assert.equal(l.badCount, 30);
    assert.equal(l.bad.length, BAD_LINES_SHOWN);
    assert.deepEqual(l.bad.slice(0, 2).map((b) => [b.line, b.text]), [[3, "bad 0"], [4, "bad 1"]]);
    assert.deepEqual(l.users, [id(1), id(2)], "the good lines are still read");
    assert.match(badLinesText(l), /^30 bad line\(s\), nothing was sent: line 3: "bad 0" not a UUID .*; and 10 more$/);
    // a first line that is neither a UUID nor a header: a list whose line 1 is bad
    assert.deepEqual(parseUserList(`typo\n${id(1)}\n`).bad.map((b) => b.line), [1]);
    // a long bad line is cut in the report
    assert.equal(parseUserList(`${"x".repeat(500)}\n`).bad[0]!.text.length, 64);
  });

  it("CSV: the header's user column (any case), other columns ignored, RFC 4180 quotes across lines, comment rows skipped", () => {
    const l = parseUserList([`id,"USER ",x`, `1,${id(2)},a`, `2,"${id(1)}","say ""hi"", twice`, `on two lines"`, "# skip", `3,${id(2)},dup`].join("\n"));
    assert.equal(l.format, "csv");
    assert.deepEqual(l.users, [id(1), id(2)]);
    assert.deepEqual([l.entries, l.duplicates, l.badCount], [3, 1, 0]);
    assert.deepEqual(csvFields(`a,"b,c","d""e",`), ["a", "b,c", 'd"e', ""]);
    assert.equal(csvFields(`a,"open`), undefined);
    // a one-column CSV is a header and its column
    assert.deepEqual(parseUserList(`user\n${id(5)}\n`).users, [id(5)]);
  });

  it("CSV refusals: no user column, a short record, an empty or bad cell, a quote never closed — each with the line it starts on", () => {
    assert.deepEqual(parseUserList(`name,email\nann,${id(1)}\n`).bad.map((b) => [b.line, b.why]), [[1, 'a CSV header needs a "user" column (columns: name, email)']]);
    const l = parseUserList([`name,user`, `a,${id(1)}`, "b", "c,", "d,nope", `e,"${id(2)}`].join("\n"));
    assert.deepEqual(l.bad.map((b) => [b.line, b.text, b.why]), [
      [3, "b", 'no "user" column: 1 field(s), "user" is column 2'],
      [4, "c,", 'the "user" column is empty'],
      [5, "d,nope", 'the "user" column is not a UUID'],
      [6, `e,"${id(2)}`, "a quoted field is not closed"],
    ]);
  });

  it("a header with two user columns (case and spaces aside) is refused, naming both, and no user is taken (issue 24 defect 8)", () => {
    const l = parseUserList([`user,name, USER `, `${id(1)},ann,${id(2)}`, `${id(3)},bob,${id(4)}`].join("\n"));
    assert.equal(l.badCount, 1);
    assert.deepEqual(l.bad.map((b) => [b.line, b.why]), [[1, 'the CSV header is ambiguous: columns 1 ("user") and 3 (" USER ") both name the "user" column (case and spaces aside); keep one']]);
    assert.deepEqual(l.users, []);
    assert.match(badLinesText(l), /nothing was sent: line 1: .*columns 1 \("user"\) and 3/);
  });
});

describe("reading --from-file within its limits (issue 24 defect 6)", () => {
  async function* pieces(...chunks: string[]) {
    for (const c of chunks) yield Buffer.from(c);
  }
  /** An endless source that counts what was pulled from it: the read must stop, not drain it. */
  function endless(chunk: Buffer, pulled: { bytes: number }) {
    return (async function* () {
      for (;;) {
        pulled.bytes += chunk.length;
        yield chunk;
      }
    })();
  }

  it("the limits are the documented constants: a million users of 64 bytes, a 64 KiB line", () => {
    assert.equal(FROM_FILE_MAX_BYTES, 64_000_000);
    assert.equal(FROM_FILE_MAX_LINE_BYTES, 65_536);
  });

  it("within the limits, the text whole, lines counted across chunks", async () => {
    assert.equal(await readBounded(pieces("ab", "c\nde", "f\n"), { maxBytes: 9, maxLineBytes: 3 }), "abc\ndef\n");
  });

  it("a line longer than the bound across chunks is refused; an endless NUL stream stops right past it", async () => {
    await assert.rejects(readBounded(pieces("ab", "cd\n"), { maxBytes: 100, maxLineBytes: 3 }), InputTooLargeError);
    const pulled = { bytes: 0 };
    await assert.rejects(readBounded(endless(Buffer.alloc(1024), pulled)), /a line is longer than 65536 bytes \(FROM_FILE_MAX_LINE_BYTES\)/);
    assert.ok(pulled.bytes <= FROM_FILE_MAX_LINE_BYTES + 1024, `pulled ${pulled.bytes} bytes`);
  });

  it("more bytes than the limit are refused as soon as they are read, naming the limit", async () => {
    await assert.rejects(readBounded(pieces("a\n", "b\n", "c\n"), { maxBytes: 5, maxLineBytes: 10 }), /larger than 5 bytes \(FROM_FILE_MAX_BYTES/);
    const pulled = { bytes: 0 };
    await assert.rejects(readBounded(endless(Buffer.from(`${id(1)}\n`.repeat(1000)), pulled), { maxBytes: 100_000, maxLineBytes: 100 }), InputTooLargeError);
    assert.ok(pulled.bytes <= 100_000 + 37_000, `pulled ${pulled.bytes} bytes`);
  });
});

describe("batches", () => {
  it("the batch size is the engine's own limit, one constant (core/base)", () => {
    assert.equal(MAX_USERS_PER_MEMBERSHIP_CALL, 1000);
    assert.equal(LIMITS.usersPerChange, MAX_USERS_PER_MEMBERSHIP_CALL);
    assert.equal(CONVERSATION_DEFAULTS.maxTargetsPerCall, MAX_USERS_PER_MEMBERSHIP_CALL);
  });

  it("sorted distinct users in batches of the limit: the same input in any order makes the same batches", () => {
    const users = Array.from({ length: 2501 }, (_, i) => id(i));
    const shuffled = [...users].reverse();
    const b = batchesOf([...shuffled, users[7]!]);
    assert.deepEqual(b.map((x) => x.length), [1000, 1000, 501]);
    assert.deepEqual(b.flat(), users);
    assert.deepEqual(batchesOf(users), b);
    assert.deepEqual(batchesOf(users, 1000).length, 3);
    assert.throws(() => batchesOf(users, 1001), RangeError);
  });
});

describe("runBulk", () => {
  /** A stand-in for AddMembers that answers each batch as committed: the unit under test is the loop, not the server. */
  const committing = (onCall?: (n: number) => void) => {
    let calls = 0;
    let version = 1;
    return {
      calls: () => calls,
      rpc: async (req: ChangeMembersRequest): Promise<MembershipChange> => {
        calls++;
        onCall?.(calls);
        await new Promise((r) => setTimeout(r, 5));
        version++;
        return { op: "join", outcome: "committed", changed: req.users, eventConversationSeq: BigInt(version - 1), messageId: "", version: BigInt(version), memberCount: 1, idempotencyId: "", audienceSize: 0, attempts: 1 };
      },
    };
  };
  const base = { tenant: id(100), group: id(101), op: "join" as const, duplicates: 0, dryRun: false, resume: "qimctl membership add …" };
  const batches = [[id(1)], [id(2)], [id(3)], [id(4)]];

  it("a stop asked for during a call lets that call finish and sends no other", async () => {
    let stop = false;
    const server = committing((n) => {
      if (n === 2) stop = true;
    });
    const out = await runBulk({ ...base, batches, rpc: server.rpc, stopRequested: () => stop });
    assert.equal(server.calls(), 2);
    assert.deepEqual(out.lines.map((l) => [l.batch, l.outcome]), [[1, "committed"], [2, "committed"]]);
    assert.deepEqual([out.summary.outcome, out.summary.resume, out.summary.failedBatch], ["interrupted", base.resume, null]);
    assert.deepEqual(out.summary.events, [{ batch: 1, eventConversationSeq: 1, outcome: "committed" }, { batch: 2, eventConversationSeq: 2, outcome: "committed" }]);
  });

  it("a failed call stops the run: the batch named, its error kept, nothing sent after it", async () => {
    const server = committing();
    const boom = new Error("refused");
    const out = await runBulk({ ...base, batches, rpc: async (req) => (req.users[0] === id(3) ? Promise.reject(boom) : server.rpc(req)) });
    assert.equal(server.calls(), 2);
    assert.equal(out.error, boom);
    assert.deepEqual([out.summary.outcome, out.summary.failedBatch, out.summary.changed, out.summary.users], ["failed", 3, 2, 4]);
  });

  it("pinned to a version: each batch expects the version the one before answered", async () => {
    const server = committing();
    const seen: (bigint | undefined)[] = [];
    await runBulk({ ...base, batches, expectVersion: 1n, rpc: (req) => { seen.push(req.expectVersion); return server.rpc(req); } });
    assert.deepEqual(seen, [1n, 2n, 3n, 4n]);
  });
});

describe("the progress bar", () => {
  it("draws on a terminal only, and steps aside for other output", () => {
    assert.equal(progressBar(0, 5, 10), "[..........]");
    assert.equal(progressBar(2, 5, 10), "[####......]");
    assert.equal(progressBar(5, 5, 10), "[##########]");
    const written: string[] = [];
    const tty = new ProgressLine({ isTTY: true, columns: 80, write: (t) => written.push(t) });
    tty.update("[##..] batch 2/4");
    tty.above(() => written.push("LINE\n"));
    tty.clear();
    assert.deepEqual(written, ["\r\x1b[2K[##..] batch 2/4", "\r\x1b[2K", "LINE\n", "[##..] batch 2/4", "\r\x1b[2K"]);
    const piped: string[] = [];
    const pipe = new ProgressLine({ isTTY: false, write: (t) => piped.push(t) });
    pipe.update("x");
    pipe.above(() => piped.push("LINE\n"));
    pipe.clear();
    assert.deepEqual(piped, ["LINE\n"]);
    const off: string[] = [];
    new ProgressLine({ isTTY: true, write: (t) => off.push(t) }, false).update("x");
    assert.deepEqual(off, [], "disabled (JSON mode): nothing");
  });
});
