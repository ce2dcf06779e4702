/**
 * Python grpcio (Debian's python3-grpcio and python3-grpc-tools, on Debian's /usr/bin/python3)
 * against the real admin server over mTLS: test/interop/reflection_client.py builds its message
 * classes from the descriptors that server reflection returns — through both reflection versions —
 * and calls the server with them.
 */
import assert from "node:assert/strict";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { ROOT } from "../e2e/qimctl.js";
import {
  adminServicesInSources,
  byUser,
  prerequisites,
  runClient,
  STANDARD_SERVICES,
  startInteropStack,
  type InteropStack,
  type MemberJson,
} from "./fixture.js";

const CLIENT = path.join(ROOT, "test", "interop", "reflection_client.py");
const REFLECTION_VERSIONS = ["v1", "v1alpha"] as const;

interface ClientReport {
  services: string[];
  list_members: { version: string; members: MemberJson[] };
  health: { status: string };
}

describe("Python grpcio by server reflection over mTLS", () => {
  let stack: InteropStack;
  let python: string;

  before(async () => {
    python = (await prerequisites()).DEBIAN_PYTHON;
    // a missing client fails here: provisioning (scripts/prerequisites.mjs test) installs it
    const present = await runClient(python, ["-c", "import grpc, grpc_tools.protoc"]);
    assert.equal(present.code, 0, `${python} lacks grpcio or grpc_tools (run \`node scripts/prerequisites.mjs test\`): ${present.stderr}`);
    stack = await startInteropStack();
  });

  after(async () => {
    await stack?.close();
  });

  for (const version of REFLECTION_VERSIONS) {
    it(`grpc.reflection.${version}: loads every service's descriptors into a descriptor_pool, calls ListMembers and Health/Check`, async () => {
      const r = await runClient(python, [
        CLIENT,
        "--target", stack.target,
        "--ca", stack.files.ca,
        "--cert", stack.files.cert,
        "--key", stack.files.key,
        "--proto-root", path.join(ROOT, "proto"),
        "--reflection", version,
        "--tenant", stack.tenant,
        "--group", stack.group,
      ]);
      assert.equal(r.code, 0, `reflection_client.py exit ${r.code}\n${r.stderr}`);
      const got = JSON.parse(r.stdout) as ClientReport;
      assert.deepEqual(got.services, [...(await adminServicesInSources()), ...STANDARD_SERVICES].sort());
      assert.equal(got.list_members.version, stack.expected.version);
      assert.deepEqual(byUser(got.list_members.members), byUser(stack.expected.members));
      assert.deepEqual(got.health, { status: "SERVING" });
    });
  }
});
