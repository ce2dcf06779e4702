/**
 * Server reflection (server/listeners/admin-grpc/reflection.ts) through grpc-js over mTLS: every file goes out as
 * the bytes protoc writes for it, with its dependencies; symbols of every kind resolve to their
 * file; what is not there is NOT_FOUND; and a server whose services and descriptors disagree does
 * not start. The third-party clients' view is in test/interop/.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { fromBinary } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { ReflectedServer, serveReflection } from "../../server/listeners/admin-grpc/reflection.js";
import { startAdminServer, type AdminServer } from "../../server/node.js";
import { ServerReflectionClient, type ServerReflectionRequest, type ServerReflectionResponse } from "../../admin-api/gen/grpc/reflection/v1/reflection.js";
import { ServerReflectionClient as ServerReflectionV1AlphaClient } from "../../admin-api/gen/grpc/reflection/v1alpha/reflection.js";
import { testPki, type TestPki } from "../certs/fixture.js";
import { ROOT } from "../e2e/qimctl.js";
import { startRedis, type RedisServer } from "../harness/redis.js";

const run = promisify(execFile);
const PROTOC = join(ROOT, "node_modules", ".bin", "protoc");
const REQUEST: Omit<ServerReflectionRequest, "messageRequest"> = { host: "localhost" };

type Answer = NonNullable<ServerReflectionResponse["messageResponse"]>;
type Reflecting = { serverReflectionInfo(): grpc.ClientDuplexStream<ServerReflectionRequest, ServerReflectionResponse> };

/** One request on its own ServerReflectionInfo stream, and its one answer. */
function ask(client: Reflecting, messageRequest: ServerReflectionRequest["messageRequest"]): Promise<ServerReflectionResponse> {
  return new Promise((resolve, reject) => {
    const stream = client.serverReflectionInfo();
    stream.once("data", (r: ServerReflectionResponse) => {
      resolve(r);
      stream.end();
    });
    stream.on("error", reject);
    stream.write({ ...REQUEST, messageRequest });
  });
}

function filesOf(answer: Answer | undefined): Buffer[] {
  assert.equal(answer?.$case, "fileDescriptorResponse", JSON.stringify(answer));
  return answer.fileDescriptorResponse.fileDescriptorProto;
}

const nameOf = (bytes: Uint8Array) => fromBinary(FileDescriptorProtoSchema, bytes).name;

describe("server reflection", () => {
  let redis: RedisServer;
  let server: AdminServer;
  let pki: TestPki;
  let dir: string;
  let v1: InstanceType<typeof ServerReflectionClient>;
  let v1alpha: InstanceType<typeof ServerReflectionV1AlphaClient>;

  /** What protoc writes for one file (-I proto), as the only file of its FileDescriptorSet. */
  async function protocBytes(file: string): Promise<Buffer> {
    const out = join(dir, `${file.replace(/\//g, "_")}.binpb`);
    await run(PROTOC, [`--descriptor_set_out=${out}`, "--include_source_info", "-I", join(ROOT, "proto"), join(ROOT, "proto", file)]);
    const reader = new BinaryReader(await readFile(out));
    reader.tag();
    return Buffer.from(reader.bytes());
  }

  before(async () => {
    pki = await testPki();
    redis = await startRedis();
    dir = await mkdtemp(join(tmpdir(), "qim-reflection-"));
    server = await startAdminServer({
      topology: { kind: "instances", addrs: [redis.addr] },
      listen: "127.0.0.1:0",
      metricsListen: null,
      auditPath: join(dir, "audit.log"),
      tls: { caPem: pki.ca.certPem, certPem: pki.server.certPem, keyPem: pki.server.keyPem },
      log: () => {},
    });
    const credentials = grpc.credentials.createSsl(Buffer.from(pki.ca.certPem), Buffer.from(pki.viewer.keyPem), Buffer.from(pki.viewer.certPem));
    v1 = new ServerReflectionClient(`localhost:${server.port}`, credentials);
    v1alpha = new ServerReflectionV1AlphaClient(`localhost:${server.port}`, credentials);
  });

  after(async () => {
    v1?.close();
    v1alpha?.close();
    await server?.close();
    await redis?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("sends each file as protoc's own bytes, the file first, then what it imports", async () => {
    const observe = filesOf((await ask(v1, { $case: "fileByFilename", fileByFilename: "qim/admin/v1/observe.proto" })).messageResponse);
    assert.deepEqual(observe.map(nameOf), ["qim/admin/v1/observe.proto", "qim/admin/v1/cluster.proto", "qim/admin/v1/cmd.proto", "qim/admin/v1/projection.proto"]);
    assert.deepEqual(observe, [await protocBytes("qim/admin/v1/observe.proto"), await protocBytes("qim/admin/v1/cluster.proto"), await protocBytes("qim/admin/v1/cmd.proto"), await protocBytes("qim/admin/v1/projection.proto")]);
    const health = filesOf((await ask(v1, { $case: "fileByFilename", fileByFilename: "grpc/health/v1/health.proto" })).messageResponse);
    assert.deepEqual(health, [await protocBytes("grpc/health/v1/health.proto")]);
  });

  it("finds the file of a service, method, nested message, field and enum value", async () => {
    const cases: [string, string][] = [
      ["qim.admin.v1.GroupService", "qim/admin/v1/groups.proto"],
      ["qim.admin.v1.GroupService.ListMembers", "qim/admin/v1/groups.proto"],
      ["qim.admin.v1.Counters.MembershipEventsEntry", "qim/admin/v1/observe.proto"],
      ["qim.admin.v1.Member.user_id", "qim/admin/v1/common.proto"],
      // enum values are scoped beside their enum
      ["grpc.health.v1.HealthCheckResponse.SERVING", "grpc/health/v1/health.proto"],
      ["grpc.reflection.v1alpha.ServerReflection", "grpc/reflection/v1alpha/reflection.proto"],
    ];
    for (const [symbol, file] of cases) {
      const files = filesOf((await ask(v1, { $case: "fileContainingSymbol", fileContainingSymbol: symbol })).messageResponse);
      assert.equal(nameOf(files[0]!), file, symbol);
    }
  });

  it("answers NOT_FOUND for what is not described, and no extension numbers of a message without extensions", async () => {
    const refusals: ServerReflectionRequest["messageRequest"][] = [
      { $case: "fileContainingSymbol", fileContainingSymbol: "qim.admin.v1.NoSuchThing" },
      { $case: "fileByFilename", fileByFilename: "qim/admin/v1/nothing.proto" },
      { $case: "fileContainingExtension", fileContainingExtension: { containingType: "qim.admin.v1.Counters", extensionNumber: 100 } },
      { $case: "allExtensionNumbersOfType", allExtensionNumbersOfType: "qim.admin.v1.NoSuchThing" },
    ];
    for (const request of refusals) {
      const answer = (await ask(v1, request)).messageResponse;
      assert.equal(answer?.$case, "errorResponse", JSON.stringify(request));
      assert.equal(answer.errorResponse.errorCode, grpc.status.NOT_FOUND, JSON.stringify(request));
    }
    const numbers = (await ask(v1, { $case: "allExtensionNumbersOfType", allExtensionNumbersOfType: "qim.admin.v1.Counters" })).messageResponse;
    assert.deepEqual(numbers, { $case: "allExtensionNumbersResponse", allExtensionNumbersResponse: { baseTypeName: "qim.admin.v1.Counters", extensionNumber: [] } });
  });

  it("echoes the request and its host; v1alpha answers as v1 does", async () => {
    const request: ServerReflectionRequest["messageRequest"] = { $case: "listServices", listServices: "*" };
    const a = await ask(v1, request);
    const b = await ask(v1alpha, request);
    assert.equal(a.validHost, REQUEST.host);
    assert.deepEqual(a.originalRequest, { ...REQUEST, messageRequest: request });
    assert.deepEqual(b, a);
  });

  it("refuses a server whose registered services and descriptors disagree", () => {
    // nothing but reflection registered: every admin service is described but not served
    assert.throws(() => serveReflection(new ReflectedServer()), /qim\.admin\.v1\.GroupService\/ListMembers is described but not registered/);
    // and a service that no descriptor describes
    const stray = new ReflectedServer();
    const bytes = { serialize: (b: Buffer) => b, deserialize: (b: Buffer) => b };
    stray.register("/qim.admin.v1.StrayService/Call", (_call: unknown, done: grpc.sendUnaryData<Buffer>) => done(null, Buffer.alloc(0)), bytes.serialize, bytes.deserialize, "unary");
    assert.throws(() => serveReflection(stray), /qim\.admin\.v1\.StrayService is registered but not described/);
  });
});
