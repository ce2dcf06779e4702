import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { startReliabilityServer, type ReliabilityServer } from "../reliability/server.js";

/**
 * A request whose bytes are not the protobuf message of its RPC (truncated, a wire type that does
 * not exist, garbage) is bad input: INVALID_ARGUMENT naming the request, audited like any refusal,
 * nothing written. grpc-js on its own answers INTERNAL "Error deserializing request" before any
 * handler runs (found by test/reliability/fuzz.test.ts).
 */
describe("a request that is not protobuf of its message", () => {
  let rs: ReliabilityServer;
  let raw: grpc.Client;
  before(async () => {
    rs = await startReliabilityServer("single");
    raw = new grpc.Client(`localhost:${rs.server.port}`,
      grpc.credentials.createSsl(Buffer.from(rs.pki.ca.certPem), Buffer.from(rs.pki.admin.keyPem), Buffer.from(rs.pki.admin.certPem)));
  });
  after(async () => {
    raw?.close();
    await rs?.close();
  });

  const call = (path: string, body: Buffer) => new Promise<grpc.ServiceError | null>((resolve) => {
    const identity = (b: Buffer) => b;
    raw.makeUnaryRequest(path, identity, identity, body, new grpc.Metadata(), { deadline: Date.now() + 10_000 }, (err) => resolve(err));
  });

  it("is INVALID_ARGUMENT(request) without a stack, audited, and writes nothing", async () => {
    await rs.settled();
    const digest = await rs.digest();
    const cases: [string, Buffer][] = [
      ["length beyond the end", Buffer.from([0x0a, 0x05, 0x61])],
      ["wire type 7", Buffer.from([0x0f, 0x00])],
      ["start group without end", Buffer.from([0x0b])],
      ["unterminated varint", Buffer.from([0x08, 0xff])],
    ];
    for (const path of ["/qim.admin.v1.GroupService/AddMembers", "/qim.admin.v1.GroupService/GetGroup"]) {
      for (const [name, body] of cases) {
        const err = await call(path, body);
        assert.ok(err, `${path} ${name}: refused`);
        assert.equal(err.code, grpc.status.INVALID_ARGUMENT, `${path} ${name}: ${grpc.status[err.code]} ${err.details}`);
        assert.equal(err.metadata.get("qim-error-field")[0], "request");
        assert.match(err.details, /^the request is not a valid qim\.admin\.v1\.\w+ message: /);
        assert.ok(!/\n\s+at /.test(err.details), "no stack trace");
      }
    }
    const audited = (await rs.server.audit.tail(100)).filter((e) => e.rpc.endsWith("/AddMembers"));
    assert.equal(audited.length, cases.length, "every refused mutation is audited");
    assert.ok(audited.every((e) => e.result === "INVALID_ARGUMENT"));
    assert.equal(await rs.digest(), digest);
    assert.equal(rs.log.filter((l) => / failed: /.test(l)).length, 0);
  });
});
