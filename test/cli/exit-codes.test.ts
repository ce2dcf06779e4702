import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { Metadata, status } from "@grpc/grpc-js";
import { Errors } from "@oclif/core";
import { FailedPreconditionError, InvalidArgumentError, UnavailableError } from "../../core/index.js";
import { testPki } from "../certs/fixture.js";
import {
  certificateHints,
  classifyError,
  classifyUnavailable,
  EXIT,
  EXIT_CODE_HELP,
  fileSystemReason,
  GRPC_EXIT,
  GRPC_STATUS,
  InterruptedError,
  usageMessage,
  UsageError,
} from "../../cli/exit-codes.js";

/** A failure shaped exactly as grpc-js hands it to a callback (code, details, metadata). */
function serviceError(code: number, details: string, md: Record<string, string> = {}) {
  const metadata = new Metadata();
  for (const [k, v] of Object.entries(md)) metadata.set(k, v);
  return Object.assign(new Error(`${code} ${details}`), { code, details, metadata });
}

// What grpc-js 1.14.7 reported in each case against the real admin server (see the e2e test).
const CLOSED_PORT = "No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1. Resolution note: ";
const OTHER_CA = "No connection established. Last error: Failed to connect (2026-11-29T21:46:43.715Z). Resolution note: ";
const NO_CERT = "No connection established. Last error: 80DC491F617F0000:error:0A00045C:SSL routines:ssl3_read_bytes:tlsv13 alert certificate required:../deps/openssl/openssl/ssl/record/rec_layer_s3.c:1601:SSL alert number 116\n (2026-11-29T21:46:43.779Z). Resolution note: ";
const SERVER_UNTRUSTED = "No connection established. Last error: Error: self-signed certificate in certificate chain. Resolution note: ";
const BAD_HOST = "Name resolution failed for target dns:nosuchhost.invalid:7443";

describe("exit codes", () => {
  it("the table is the documented one", () => {
    assert.deepEqual({ ...EXIT }, { OK: 0, INTERNAL: 1, USAGE: 2, NOT_FOUND: 3, CONFLICT: 4, CONNECTION: 5, AUTH: 6, INTERRUPTED: 130 });
    assert.deepEqual(EXIT_CODE_HELP.map(([c]) => Number(c)), [0, 1, 2, 3, 4, 5, 6, 130]);
  });

  it("our gRPC status numbers are grpc-js's", () => {
    for (const [name, value] of Object.entries(GRPC_STATUS)) assert.equal(value, (status as unknown as Record<string, number>)[name], name);
  });

  it("maps every gRPC status", () => {
    const expected: Record<string, number> = {
      CANCELLED: 5, UNKNOWN: 1, INVALID_ARGUMENT: 2, DEADLINE_EXCEEDED: 5, NOT_FOUND: 3, ALREADY_EXISTS: 4, PERMISSION_DENIED: 6,
      RESOURCE_EXHAUSTED: 5, FAILED_PRECONDITION: 4, ABORTED: 4, OUT_OF_RANGE: 2, UNIMPLEMENTED: 4, INTERNAL: 1, UNAVAILABLE: 5,
      DATA_LOSS: 1, UNAUTHENTICATED: 6,
    };
    for (const [name, code] of Object.entries(GRPC_STATUS)) {
      if (name === "OK") continue;
      assert.equal(GRPC_EXIT[code], expected[name], name);
      const details = name === "UNAVAILABLE" ? CLOSED_PORT : `${name} happened`;
      assert.equal(classifyError(serviceError(code, details)).exitCode, expected[name], name);
    }
  });

  it("INVALID_ARGUMENT from the server names the field and keeps the domain code", () => {
    const f = classifyError(serviceError(status.INVALID_ARGUMENT, "users names 1001 distinct users", { "qim-error-code": "INVALID_ARGUMENT", "qim-error-field": "users" }));
    assert.deepEqual(f, { exitCode: 2, code: "INVALID_ARGUMENT", message: "users names 1001 distinct users", field: "users" });
  });

  it("ABORTED with VERSION_CONFLICT or MEMBERSHIP_CHANGED is a conflict, with the domain code", () => {
    for (const domain of ["VERSION_CONFLICT", "MEMBERSHIP_CHANGED"]) {
      const f = classifyError(serviceError(status.ABORTED, "version is 3, expected 2", { "qim-error-code": domain }));
      assert.equal(f.exitCode, EXIT.CONFLICT);
      assert.equal(f.code, domain);
    }
  });

  it("UNAVAILABLE from the server itself (store unreachable) is a connection failure, not a TLS refusal", () => {
    const f = classifyError(serviceError(status.UNAVAILABLE, "the store is unreachable (request x)", { "qim-error-code": "UNAVAILABLE" }));
    assert.equal(f.exitCode, EXIT.CONNECTION);
    assert.equal(f.code, "UNAVAILABLE");
  });

  it("tells a TLS refusal from an unreachable server by grpc-js's details", () => {
    assert.equal(classifyUnavailable(CLOSED_PORT), "unreachable");
    assert.equal(classifyUnavailable(BAD_HOST), "unreachable");
    assert.equal(classifyUnavailable(OTHER_CA), "tls-refused");
    assert.equal(classifyUnavailable(NO_CERT), "tls-refused");
    assert.equal(classifyUnavailable(SERVER_UNTRUSTED), "server-untrusted");
    // plaintext against a TLS server also ends in "Failed to connect": no certificate was refused
    assert.equal(classifyUnavailable(OTHER_CA, { insecure: true }), "unreachable");

    const refused = classifyError(serviceError(status.UNAVAILABLE, OTHER_CA), { endpoint: "localhost:7443" });
    assert.equal(refused.exitCode, EXIT.AUTH);
    assert.ok(refused.message.startsWith("the server refused this client certificate: "), refused.message);
    assert.ok(refused.message.includes("Failed to connect"));
    const closed = classifyError(serviceError(status.UNAVAILABLE, CLOSED_PORT), { endpoint: "localhost:1" });
    assert.equal(closed.exitCode, EXIT.CONNECTION);
    assert.equal(closed.message, "cannot reach the server at localhost:1: No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1.");
    assert.equal(classifyError(serviceError(status.UNAVAILABLE, SERVER_UNTRUSTED)).exitCode, EXIT.AUTH);
  });

  it("DEADLINE_EXCEEDED says how long it waited", () => {
    const f = classifyError(serviceError(status.DEADLINE_EXCEEDED, "Deadline exceeded after 2.001s"), { endpoint: "localhost:7443", timeoutMs: 2000 });
    assert.equal(f.exitCode, EXIT.CONNECTION);
    assert.match(f.message, /did not answer within 2 s \(--timeout\)/);
  });

  it("local errors: usage, interrupted, oclif parse errors, existing files, anything else", () => {
    assert.deepEqual(classifyError(new UsageError("--group", "not a UUID")), { exitCode: 2, code: "INVALID_ARGUMENT", message: "--group: not a UUID", field: "--group" });
    assert.equal(classifyError(new InterruptedError()).exitCode, 130);
    const parse = classifyError(new Errors.CLIError("The following error occurred:\n  Missing required flag group\nSee more help with --help", { exit: 2 }));
    assert.deepEqual(parse, { exitCode: 2, code: "USAGE", message: "--group: missing required flag", field: "--group" });
    assert.equal(classifyError(Object.assign(new Error("refusing to overwrite ca.key"), { code: "EEXIST" })).exitCode, EXIT.CONFLICT);
    const internal = classifyError(new TypeError("x is undefined"));
    assert.deepEqual(internal, { exitCode: 1, code: "INTERNAL", message: "x is undefined" });
  });

  it("rewords oclif's parse messages with the flag first", () => {
    assert.deepEqual(usageMessage("Parsing --limit \n\tExpected an integer less than or equal to 1000 but received: 5000\nSee more help with --help"), {
      message: "--limit: Expected an integer less than or equal to 1000 but received: 5000", field: "--limit",
    });
    assert.deepEqual(usageMessage("Nonexistent flag: --frob\nSee more help with --help"), { message: "--frob: no such flag (see --help)", field: "--frob" });
    assert.deepEqual(usageMessage("Expected --output=xml to be one of: table, json"), { message: "Expected --output=xml to be one of: table, json", field: "--output" });
  });

  it("core's own errors (a server started in-process refused at start-up) map like the server's statuses", () => {
    const refused = new FailedPreconditionError("session projection refuses to start: partition 0 BEYOND_HIGH: …", { partitions: [0] });
    assert.deepEqual(classifyError(refused), { exitCode: 4, code: "FAILED_PRECONDITION", message: refused.message });
    assert.deepEqual(classifyError(new InvalidArgumentError("keyspace", "keyspace must match …")), { exitCode: 2, code: "INVALID_ARGUMENT", message: "keyspace must match …", field: "keyspace" });
    assert.equal(classifyError(new UnavailableError("cannot reach Cassandra")).exitCode, 5);
    // a Node system error with a string code is not one of them
    assert.equal(classifyError(Object.assign(new Error("nope"), { code: "ENOENT" })).exitCode, 1);
  });

  it("explains a refused certificate from what can be checked locally", async () => {
    const pki = await testPki();
    assert.match(certificateHints(pki.expired.certPem, pki.ca.certPem).join("\n"), /expired on/);
    assert.match(certificateHints(pki.notYetValid.certPem, pki.ca.certPem).join("\n"), /not valid before/);
    assert.match(certificateHints(pki.otherCaAdmin.certPem, pki.ca.certPem).join("\n"), /not signed by the CA in --ca/);
    assert.match(certificateHints(undefined, pki.ca.certPem).join("\n"), /no client certificate was presented/);
    assert.match(certificateHints(pki.admin.certPem, pki.ca.certPem).join("\n"), /fingerprint/);
  });
});

describe("file-system errors are bad input (exit 2) with a sentence naming the path (issue 24)", () => {
  /** The error a real fs call throws (never a hand-made object). */
  const thrown = (f: () => unknown): unknown => {
    try {
      f();
    } catch (err) {
      return err;
    }
    assert.fail("the call did not fail");
  };

  it("ENOTDIR and mkdir's EEXIST name the file in the way; EISDIR and ENOENT say what they are", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-fs-"));
    try {
      const file = path.join(dir, "f");
      writeFileSync(file, "");
      assert.deepEqual(classifyError(thrown(() => mkdirSync(path.join(file, "qimctl"), { recursive: true }))), {
        exitCode: EXIT.USAGE, code: "INVALID_ARGUMENT", message: `cannot create the directory ${path.join(file, "qimctl")}: ${file} is a file, not a directory`,
      });
      assert.deepEqual(classifyError(thrown(() => mkdirSync(file, { recursive: true }))), {
        exitCode: EXIT.USAGE, code: "INVALID_ARGUMENT", message: `cannot create the directory ${file}: ${file} is a file, not a directory`,
      });
      assert.equal(classifyError(thrown(() => openSync(path.join(dir, "missing"), "r"))).message, `cannot open ${path.join(dir, "missing")}: no such file or directory`);
      assert.equal(fileSystemReason(thrown(() => readFileSync(dir))), "it is a directory, not a file");
      // a certs file refused without --force stays a conflict (no syscall: ours, not the OS's)
      assert.equal(classifyError(Object.assign(new Error("refusing to overwrite"), { code: "EEXIST" })).exitCode, EXIT.CONFLICT);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("EACCES and EPERM from a real call (as root: writing into sysfs), when this machine's /sys refuses", (t) => {
    const eacces = thrown(() => writeFileSync("/sys/kernel/qimctl-test", "x")) as NodeJS.ErrnoException;
    if (eacces.code !== "EACCES") return t.skip(`writing into /sys/kernel is ${eacces.code} here`);
    assert.deepEqual(classifyError(eacces), { exitCode: EXIT.USAGE, code: "INVALID_ARGUMENT", message: "cannot open /sys/kernel/qimctl-test: permission denied" });
  });
});
