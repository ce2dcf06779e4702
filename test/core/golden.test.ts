import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { blake3 } from "@noble/hashes/blake3.js";
import {
  ADMIN_ACTOR,
  bucketTag,
  commitBucket,
  COMMIT_BUCKET_COUNT,
  decodeMembershipPayload,
  encodeMembershipPayload,
  MembershipOp,
  membershipIdempotencyId,
  parseUuid,
  type Uuid,
} from "../../core/index.js";

/** The vectors below are UUID text; parsed as any input is. */
const id = (text: string): Uuid => parseUuid(text, "golden id");

// Golden vectors pin the frozen functions: a change here re-homes every conversation or breaks
// idempotency of in-flight membership retries. The values were cross-checked against an
// independent blake3 implementation (the Rust crate through its Python binding).
const TENANT = id("0193a4f0-1c2d-7e3f-8a4b-5c6d7e8f9a0b");

describe("commitBucket", () => {
  it("is blake3 (reference vector for the empty input)", () => {
    assert.equal(Buffer.from(blake3(new Uint8Array(0))).toString("hex"),
      "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262");
  });

  it("maps fixed (tenant, conversation) pairs to fixed buckets", () => {
    assert.equal(COMMIT_BUCKET_COUNT, 256);
    const golden: [Uuid, number, string][] = [
      [id("00000000-0000-0000-0000-000000000001"), 89, "{b089}"],
      [id("7c9e6679-7425-40de-944b-e07fc1f90ae7"), 210, "{b210}"],
      [id("ffffffff-ffff-ffff-ffff-ffffffffffff"), 241, "{b241}"],
      [id("3f2504e0-4f89-11d3-9a0c-0305e82c3301"), 43, "{b043}"],
    ];
    for (const [conversation, bucket, tag] of golden) {
      assert.equal(commitBucket(TENANT, conversation), bucket, conversation);
      assert.equal(bucketTag(commitBucket(TENANT, conversation)), tag);
    }
  });
});

describe("qim.membership.v1 payload", () => {
  it("encodes an admin add of two users to the golden bytes", () => {
    const bytes = encodeMembershipPayload({
      op: MembershipOp.JOIN,
      actor: ADMIN_ACTOR,
      users: [id("11111111-1111-1111-1111-111111111111"), id("22222222-2222-2222-2222-222222222222")],
    });
    assert.equal(Buffer.from(bytes).toString("hex"),
      "01" + "00".repeat(16) + "0002" + "11".repeat(16) + "22".repeat(16));
  });

  it("encodes an admin remove of one user to the golden bytes and decodes back", () => {
    const body = { op: MembershipOp.REMOVE, actor: ADMIN_ACTOR, users: [id("33333333-3333-3333-3333-333333333333")] };
    const bytes = encodeMembershipPayload(body);
    assert.equal(Buffer.from(bytes).toString("hex"), "03" + "00".repeat(16) + "0001" + "33".repeat(16));
    assert.deepEqual(decodeMembershipPayload(bytes), body);
  });

  it("rejects a payload whose length does not match n", () => {
    const bytes = encodeMembershipPayload({ op: MembershipOp.LEAVE, actor: ADMIN_ACTOR, users: [id("33333333-3333-3333-3333-333333333333")] });
    assert.throws(() => decodeMembershipPayload(bytes.subarray(0, bytes.length - 1)), /does not hold 1 users/);
    assert.throws(() => decodeMembershipPayload(new Uint8Array([9, ...new Array(18).fill(0)])), /unknown membership op 9/);
  });
});

describe("membership idempotency id", () => {
  const input = {
    tenant: TENANT,
    group: id("7c9e6679-7425-40de-944b-e07fc1f90ae7"),
    op: MembershipOp.JOIN,
    actor: ADMIN_ACTOR,
    version: 7,
    targets: [id("22222222-2222-2222-2222-222222222222"), id("11111111-1111-1111-1111-111111111111")],
  };

  it("has the golden value for a fixed input, whatever the order of targets", () => {
    assert.equal(Buffer.from(membershipIdempotencyId(input)).toString("hex"), "abff4690b445bf90a95659b27827432f");
    assert.equal(Buffer.from(membershipIdempotencyId({ ...input, targets: [...input.targets].reverse() })).toString("hex"),
      "abff4690b445bf90a95659b27827432f");
  });

  it("changes with the planned version and with the op", () => {
    const base = Buffer.from(membershipIdempotencyId(input)).toString("hex");
    assert.notEqual(Buffer.from(membershipIdempotencyId({ ...input, version: 8 })).toString("hex"), base);
    assert.notEqual(Buffer.from(membershipIdempotencyId({ ...input, op: MembershipOp.REMOVE })).toString("hex"), base);
  });
});
