/**
 * grpcurl (pinned by scripts/prerequisites.mjs) against the real admin server over mTLS, by
 * server reflection alone: no -proto file is given, so every answer here depends on the
 * descriptors the server serves being ones that grpcurl's protobuf validation accepts (issue 10).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  adminServicesInSources,
  byUser,
  CLIENT_TIMEOUT_MS,
  prerequisites,
  runClient,
  STANDARD_SERVICES,
  startInteropStack,
  type InteropStack,
  type MemberJson,
  type Ran,
} from "./fixture.js";

/** grpcurl's own limit per invocation, in seconds, below the process timeout of the fixture. */
const GRPCURL_MAX_TIME_S = String(CLIENT_TIMEOUT_MS / 2 / 1000);

/** The server writes a refusal's audit entry as it refuses; how long to let it land: AUDIT_POLLS × AUDIT_POLL_MS. */
const AUDIT_POLLS = 50;
const AUDIT_POLL_MS = 50;

describe("grpcurl by server reflection over mTLS", () => {
  let stack: InteropStack;
  let grpcurl: string;
  const call = (args: string[], { clientCert = true } = {}): Promise<Ran> =>
    runClient(grpcurl, [
      "-max-time", GRPCURL_MAX_TIME_S,
      "-cacert", stack.files.ca,
      ...(clientCert ? ["-cert", stack.files.cert, "-key", stack.files.key] : []),
      ...args,
    ]);
  /** `grpcurl [FLAGS] localhost:PORT WHAT…`, which must succeed; its output. */
  const ok = async (what: string[], flags: string[] = []): Promise<string> => {
    const r = await call([...flags, stack.target, ...what]);
    assert.equal(r.code, 0, `grpcurl ${[...flags, ...what].join(" ")}: exit ${r.code}\n${r.stderr}`);
    return r.stdout;
  };

  before(async () => {
    // a missing grpcurl fails here: provisioning (scripts/prerequisites.mjs test) installs it
    const found = (await prerequisites()).findGrpcurl();
    assert.ok(found, "grpcurl is not installed: run `node scripts/prerequisites.mjs test`");
    grpcurl = found;
    stack = await startInteropStack();
  });

  after(async () => {
    await stack?.close();
  });

  it("lists every qim.admin.v1 service of the sources, grpc.health.v1.Health and reflection", async () => {
    const listed = (await ok(["list"])).trim().split("\n").sort();
    assert.deepEqual(listed, [...(await adminServicesInSources()), ...STANDARD_SERVICES].sort());
  });

  it("describes every listed service", async () => {
    const listed = (await ok(["list"])).trim().split("\n");
    for (const service of listed) {
      const out = await ok(["describe", service]);
      assert.match(out, new RegExp(`^${service.replace(/\./g, "\\.")} is a service:$`, "m"), out);
    }
  });

  it("describes qim.admin.v1.Counters, a message with map fields, under the proto's snake_case names", async () => {
    const out = await ok(["describe", "qim.admin.v1.Counters"]);
    assert.match(out, /^qim\.admin\.v1\.Counters is a message:$/m);
    assert.match(out, /map<string, double> membership_events = 1;/);
    assert.match(out, /map<string, double> membership_retries = 2;/);
  });

  it("calls GroupService/ListMembers by reflection and reads the members the test set up", async () => {
    const out = await ok(["qim.admin.v1.GroupService/ListMembers"], ["-d", JSON.stringify({ tenant: stack.tenant, group: stack.group })]);
    const got = JSON.parse(out) as { version: string; members: MemberJson[] };
    assert.equal(got.version, stack.expected.version);
    assert.deepEqual(byUser(got.members), byUser(stack.expected.members));
  });

  it("checks grpc.health.v1.Health: SERVING", async () => {
    const got = JSON.parse(await ok(["grpc.health.v1.Health/Check"])) as { status: string };
    assert.deepEqual(got, { status: "SERVING" });
  });

  it("without a client certificate the server refuses the handshake (exit ≠ 0), and audits it", async () => {
    const refusedBefore = await stack.refusedHandshakes();
    const r = await call([stack.target, "list"], { clientCert: false });
    assert.notEqual(r.code, 0, r.stdout);
    // the same command with the certificate works, so the certificate is what was refused
    await ok(["list"]);
    // grpcurl only says it could not dial; the server's audit log says why
    let refused = refusedBefore;
    for (let i = 0; i < AUDIT_POLLS && refused === refusedBefore; i++) {
      await new Promise((resolve) => setTimeout(resolve, AUDIT_POLL_MS));
      refused = await stack.refusedHandshakes();
    }
    assert.ok(refused > refusedBefore, `no refused TLS handshake audited; grpcurl said: ${r.stderr}`);
  });
});
