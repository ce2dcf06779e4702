/**
 * Hostile input at the client gateway (issue 27, "Bad input"): every field of every frame a device
 * may send, and every frame only the node sends, written on the wire by hand (test/reliability/
 * fuzz-wire.ts: the extremes of each field type, wrong wire types, fields sent twice, 100,000-entry
 * repeated fields, frames past the 128 KiB limit) over an authenticated connection of a real node;
 * then seeded random frames (QIM_SEED=<n> replays one; the seed is printed). Frame types and fields
 * come from proto/qim/client/v1/frames.proto, so a new frame is fuzzed without touching this file.
 *
 * Every request gets exactly one answer with its request_id — its own answer type or an ERROR whose
 * code is a clean one (never INTERNAL or UNAVAILABLE, never a stack trace in the message) — or the
 * connection is closed with a documented code (1007 undecodable, 1009 too big, 4403 another device);
 * a frame only the node sends is refused UNKNOWN_FRAME. What is written is only what was
 * acknowledged: the group's history grows by exactly the seqs of the SEND_ACKs and leave answers the
 * fuzz got (read back through the admin API). The node logs no failed request and serves a new
 * device at the end.
 */
import assert from "node:assert/strict";
import { randomInt, randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { loadSync } from "@grpc/proto-loader";
import { Frame } from "../../admin-api/gen/qim/client/v1/frames.js";
import { ok, run } from "../e2e/qimctl.js";
import { SOAK } from "../reliability/common.js";
import { lenField, protoDir, Requests, Rng, UNDECODABLE, varintField, type MessageDesc } from "../reliability/fuzz-wire.js";
import { Device, show, startGatewayNode, type GatewayNode } from "./device.js";

/** The frames a device sends (docs/gateway.md's frame table, direction "up"); every other body field is the node's. */
const UP = ["auth", "ping", "send", "pull_history", "mark_read", "pull_session_list", "leave_group", "recall", "edit", "react", "typing", "rtc_signal", "room_join", "room_replay", "room_send", "room_leave", "presence_sub"];
/** Random frames per type after the table. */
const RANDOM_PER_TYPE = SOAK ? 500 : 25;
/** Codes a refusal may carry: the request's fault or a state the device can act on. */
const CLEAN = new Set(["INVALID_ARGUMENT", "NOT_FOUND", "PERMISSION_DENIED", "FAILED_PRECONDITION", "IDEMPOTENCY_CONFLICT", "RATE_LIMITED", "UNKNOWN_FRAME", "MALFORMED_FRAME", "ALREADY_EXISTS", "OUT_OF_RANGE"]);
/** Close codes a hostile frame may cause (docs/gateway.md "Close codes"). */
const CLOSES = new Set([1007, 1009, 4403]);
const STACK = /\n\s+at |\bat .+:\d+:\d+\)|node_modules|\/dist\/|\.js:\d+/;

function frameTypes(): { body: { name: string; number: number; type: MessageDesc }[]; types: Map<string, MessageDesc> } {
  const def = loadSync(["qim/client/v1/frames.proto"], { includeDirs: [protoDir()] }) as unknown as Record<string, { format?: string; type: MessageDesc }>;
  const types = new Map<string, MessageDesc>();
  for (const [name, entry] of Object.entries(def)) if (typeof entry.format === "string") types.set(name, entry.type);
  const frame = types.get("qim.client.v1.Frame")!;
  const body = frame.field.filter((f) => f.number !== 1).map((f) => ({ name: f.name, number: f.number, type: types.get(f.typeName.replace(/^\./, "")) ?? types.get(`qim.client.v1.${f.typeName}`)! }));
  assert.ok(body.length > 10 && body.every((b) => b.type), "the Frame's body fields and their messages");
  return { body, types };
}

describe(`the gateway fuzz: every field of every frame${SOAK ? " (soak)" : ""}`, { timeout: 600_000 }, () => {
  const seed = process.env.QIM_SEED !== undefined ? Number(process.env.QIM_SEED) : randomInt(2 ** 31);
  let node: GatewayNode;
  let context: string;
  let url: string;
  let ca: Buffer;
  let tenant: string;
  const alice = randomUUID();
  const bob = randomUUID();
  let group: string;

  before(async () => {
    console.log(`# gateway fuzz seed ${seed} (QIM_SEED=${seed} replays it)`);
    node = await startGatewayNode("qim-gateway-fuzz-");
    ({ context, url, ca, tenant } = node);
    group = ok(await run(["group", "create", "--owner", alice, "--member", bob], { context }), "group create").group as string;
  });

  after(async () => {
    await node?.stop();
  });

  it("every request gets one clean answer or a documented close; only what was acknowledged is written; the node stays healthy", async () => {
    assert.ok(Number.isSafeInteger(seed), `QIM_SEED must be an integer, got ${process.env.QIM_SEED}`);
    const rng = new Rng(seed);
    const { body, types } = frameTypes();
    const requests = new Requests(types, { tenant, groups: [group], users: [alice, bob] }, rng);
    const { token } = ok(await run(["token", "issue", "--user", bob, "--device", "fuzz", "--ttl", "1h"], { context }), "token issue") as { token: string };
    const historySeqs = async () => (ok(await run(["history", "--group", group, "--as", alice], { context }), "history").records as { conversationSeq: number }[]).map((r) => r.conversationSeq);
    const before = await historySeqs();

    let conn: Device | null = null;
    const connect = async (): Promise<Device> => {
      const d = await Device.open(url, ca, token);
      assert.ok(d instanceof Device, show(d));
      const a = await d.request({ $case: "auth", auth: { deviceId: "fuzz", clientVersion: "fuzz" } });
      assert.equal(a.body?.$case, "authOk", show(a.body));
      return d;
    };
    let nextId = 1_000_000n;
    const findings: string[] = [];
    const written = new Set<number>();
    let cases = 0;
    const closes = new Map<number, number>();

    /**
     * One frame: the body field `number` holding `inner` under a fresh request id; or `raw` bytes,
     * answered (when they decode at all) with the request id they carry, 0 when none.
     */
    const send = async (what: string, number: number, inner: Buffer, raw?: { bytes: Buffer; id: bigint }): Promise<void> => {
      cases++;
      conn ??= await connect();
      const d = conn;
      const id = raw ? raw.id : ++nextId;
      const bytes = raw ? raw.bytes : Buffer.concat([varintField(1, id), lenField(number, inner)]);
      d.sendRaw(bytes);
      let answer: Frame | null = null;
      try {
        answer = await d.next((f) => f.requestId === id || (f.requestId === 0n && f.body?.$case === "error"));
      } catch {
        // closed before an answer: must be a documented close
      }
      if (answer?.body?.$case === "error") {
        const e = answer.body.error;
        if (!CLEAN.has(e.code)) findings.push(`${what}: ERROR ${e.code}: ${e.message.slice(0, 200)}`);
        if (STACK.test(e.message)) findings.push(`${what}: a stack trace in the message: ${JSON.stringify(e.message.slice(0, 200))}`);
        if (answer.requestId !== id && e.code !== "MALFORMED_FRAME") findings.push(`${what}: an ERROR for another request (${answer.requestId}): ${e.code}`);
      } else if (answer) {
        const b = answer.body;
        if (b?.$case === "sendAck" && !b.sendAck.duplicate) written.add(Number(b.sendAck.conversationSeq));
        if (b?.$case === "memberListBatch") written.add(Number(b.memberListBatch.eventSeq));
      }
      // an undecodable frame is answered MALFORMED_FRAME and the connection closed
      if (!answer || (answer.body?.$case === "error" && answer.body.error.code === "MALFORMED_FRAME")) {
        const c = await d.whenClosed().catch(() => null);
        if (!c) findings.push(`${what}: no answer and no close`);
        else {
          closes.set(c.code, (closes.get(c.code) ?? 0) + 1);
          if (!CLOSES.has(c.code)) findings.push(`${what}: closed with ${c.code} ${c.reason}`);
        }
        conn = null;
      }
    };

    // 1. the table: every extreme of every field of every frame type, over an otherwise valid frame
    for (const b of body) {
      if (UP.includes(b.name)) {
        await send(`${b.name} valid`, b.number, requests.valid(b.type));
        for (const f of b.type.field) {
          for (const [label, bytes] of requests.extremes(f)) await send(`${b.name}.${f.name} ${label}`, b.number, Buffer.concat([requests.valid(b.type, f), bytes()]));
        }
      } else {
        // a frame only the node sends
        await send(`${b.name} (a node's frame)`, b.number, requests.valid(b.type));
      }
    }
    // 2. frames that are not a Frame at all, and a frame with no body
    for (const [label, bytes] of UNDECODABLE) await send(`Frame: ${label}`, 0, Buffer.alloc(0), { bytes, id: 0n });
    const bare = ++nextId;
    await send("Frame: only a request id", 0, Buffer.alloc(0), { bytes: varintField(1, bare), id: bare });
    // 3. seeded random frames of every type
    for (const b of body) {
      const n = UP.includes(b.name) ? RANDOM_PER_TYPE : 3;
      for (let i = 0; i < n; i++) {
        const r = requests.random(b.type);
        await send(`${b.name} random (${r.label})`, b.number, r.bytes);
      }
    }
    (conn as Device | null)?.ws.close();
    console.log(`# gateway fuzz: ${cases} frames, ${written.size} writes acknowledged, closes ${JSON.stringify([...closes])}`);

    // only what was acknowledged was written
    const afterSeqs = await historySeqs();
    const added = afterSeqs.filter((s) => !before.includes(s)).sort((a, b) => a - b);
    assert.deepEqual(added, [...written].sort((a, b) => a - b), "the history grew by exactly the acknowledged seqs");
    // the node: no failed request in its log, and a new device is served
    for (const line of node.server.log().split("\n").filter((l) => / failed: /.test(l))) findings.push(`node log: ${line.slice(0, 300)}`);
    const fresh = await connect();
    assert.equal((await fresh.request({ $case: "ping", ping: {} })).body?.$case, "pong");
    fresh.ws.close();
    assert.deepEqual(findings.slice(0, 30), [], `${findings.length} findings (seed ${seed})`);
  });
});
