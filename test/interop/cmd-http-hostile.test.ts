/**
 * The CMD sync HTTP API under input its clients did not mean to send (issue 24): requests
 * pipelined on one TLS connection are served in order, one user's calls over two connections keep
 * spec 001's rule (an ack applies the latest generation of the user's sync), and a body over the
 * limit is answered 413 with its JSON before the connection closes (curl and a raw socket), while
 * a body of exactly the limit is served. One real admin server over mTLS with its HTTP listener,
 * on its own redis-server; every CMD message is the test's own send, and every expected answer is
 * worked out here by hand.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { writeFile } from "node:fs/promises";
import { connect, type TLSSocket } from "node:tls";
import { after, before, describe, it } from "node:test";
import { cmdOf } from "../../server/routing/cmd-local.js";
import type { AdminServer } from "../../server/node.js";
import { CMD_HTTP_MAX_BODY_BYTES, type Uuid } from "../../core/index.js";
import type { TestPkiFiles } from "../certs/fixture.js";
import { CLIENT_TIMEOUT_MS, runClient, startCmdHttpStack, type CmdHttpStack } from "./fixture.js";

const CURL_MAX_TIME_S = String(CLIENT_TIMEOUT_MS / 2 / 1000);
/** How long a raw exchange may take before the test fails instead of hanging. */
const RAW_TIMEOUT_MS = 20_000;

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

interface RawExchange {
  responses: RawResponse[];
  /** The server ended the connection (a FIN, after what it sent). */
  ended: boolean;
  /** A socket error (ECONNRESET: the server reset the connection), null when none. */
  error: string | null;
}

/** One HTTP/1.1 POST as bytes, with Content-Length. */
function post(p: string, body: string | Buffer): Buffer {
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body);
  return Buffer.concat([Buffer.from(`POST ${p} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${b.length}\r\n\r\n`), b]);
}

/** The body of a chunked response at `from`, and where it ends; null while incomplete. */
function dechunk(buf: Buffer, from: number): { body: Buffer; end: number } | null {
  const parts: Buffer[] = [];
  let at = from;
  for (;;) {
    const eol = buf.indexOf("\r\n", at);
    if (eol < 0) return null;
    const size = parseInt(buf.subarray(at, eol).toString("latin1"), 16);
    if (buf.length < eol + 2 + size + 2) return null;
    if (size === 0) return { body: Buffer.concat(parts), end: eol + 4 };
    parts.push(buf.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

/** Complete responses at the front of `buf` (Content-Length or chunked), and the bytes left. */
function parseResponses(buf: Buffer): { responses: RawResponse[]; rest: Buffer } {
  const responses: RawResponse[] = [];
  let rest = buf;
  for (;;) {
    const end = rest.indexOf("\r\n\r\n");
    if (end < 0) break;
    const [statusLine, ...lines] = rest.subarray(0, end).toString("latin1").split("\r\n");
    const headers: Record<string, string> = {};
    for (const l of lines) {
      const i = l.indexOf(":");
      headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    const m = /^HTTP\/1\.1 (\d{3}) /.exec(statusLine!);
    assert.ok(m, `a status line: ${statusLine}`);
    let body: Buffer;
    let next: number;
    if (headers["transfer-encoding"] === "chunked") {
      const d = dechunk(rest, end + 4);
      if (!d) break;
      body = d.body;
      next = d.end;
    } else {
      const length = Number(headers["content-length"] ?? 0);
      if (rest.length < end + 4 + length) break;
      body = rest.subarray(end + 4, end + 4 + length);
      next = end + 4 + length;
    }
    responses.push({ status: Number(m[1]), headers, body: body.toString("utf8") });
    rest = rest.subarray(next);
  }
  return { responses, rest };
}

describe("CMD sync HTTP API under hostile input: pipelining, two connections, bodies over the limit (issue 24)", { timeout: 180_000 }, () => {
  let server: AdminServer;
  let dir: string;
  let files: TestPkiFiles;
  let service: { cert: string; key: string; certPem: string; keyPem: string };
  let caPem: string;
  let stack: CmdHttpStack;
  const tenant = randomUUID() as Uuid;

  before(async () => {
    stack = await startCmdHttpStack(tenant, "qim-cmd-http-hostile-");
    ({ server, dir, files, service, caPem } = stack);
    assert.ok(server.sync, "the server started its CMD sync HTTP API");
  });

  after(async () => {
    await stack?.close();
  });

  /** A TLS connection to the HTTP API with the service certificate. */
  function open(): Promise<TLSSocket> {
    return new Promise((resolve, reject) => {
      const s = connect({ host: "127.0.0.1", port: server.sync!.port, servername: "localhost", ca: caPem, cert: service.certPem, key: service.keyPem });
      s.once("secureConnect", () => resolve(s));
      s.once("error", reject);
    });
  }

  /**
   * Writes `bytes` in ONE write and reads until `count` responses arrived (keeping the connection
   * open) or, with `untilClosed`, until the server ends the connection.
   */
  function exchange(s: TLSSocket, bytes: Buffer, count: number, untilClosed = false): Promise<RawExchange> {
    return new Promise((resolve, reject) => {
      let buf: Buffer = Buffer.alloc(0);
      const out: RawExchange = { responses: [], ended: false, error: null };
      const timer = setTimeout(() => reject(new Error(`no ${count} answer(s) within ${RAW_TIMEOUT_MS} ms: ${JSON.stringify(out)}`)), RAW_TIMEOUT_MS);
      const finish = () => {
        clearTimeout(timer);
        s.removeListener("data", onData);
        resolve(out);
      };
      const onData = (c: Buffer) => {
        const parsed = parseResponses(Buffer.concat([buf, c]));
        buf = parsed.rest;
        out.responses.push(...parsed.responses);
        if (!untilClosed && out.responses.length >= count) finish();
      };
      s.on("data", onData);
      s.once("end", () => {
        out.ended = true;
        finish();
      });
      s.once("error", (err: NodeJS.ErrnoException) => {
        out.error = err.code ?? err.message;
        finish();
      });
      s.write(bytes);
    });
  }

  /** One CMD message on a fresh command channel to `user`; its source channel id. */
  async function sendTo(user: Uuid): Promise<string> {
    const source = `g-${randomUUID().slice(0, 8)}`;
    const sent = await cmdOf(server.runtime).send({
      tenant, channelId: source, channelType: 2, from: null, to: [user], noPersist: false, payload: Buffer.from("refresh"),
    });
    assert.equal(sent.message.messageSeq, 1, "the channel's first message");
    return source;
  }

  const sync = (uid: string) => post("/message/sync", JSON.stringify({ uid, message_seq: 0, limit: 100 }));
  const ack = (uid: string) => post("/message/syncack", JSON.stringify({ uid, last_message_seq: 1 }));
  /** A sync answer as `channel_id#message_seq` strings. */
  const seqs = (r: RawResponse) => (JSON.parse(r.body) as { channel_id: string; message_seq: number }[]).map((m) => `${m.channel_id}#${m.message_seq}`);

  it("[sync, syncack, sync] pipelined in one write: the message, 200, then [] — the ack applied the first sync", async () => {
    const user = randomUUID() as Uuid;
    const source = await sendTo(user);
    const s = await open();
    try {
      const r = await exchange(s, Buffer.concat([sync(user), ack(user), sync(user)]), 3);
      assert.equal(r.error, null);
      assert.deepEqual(r.responses.map((x) => x.status), [200, 200, 200]);
      assert.deepEqual(seqs(r.responses[0]!), [`${source}#1`], "the first sync answers the one message");
      assert.deepEqual(JSON.parse(r.responses[1]!.body), { status: 200 });
      assert.equal(r.responses[2]!.body, "[]", "the ack applied the first sync's generation: nothing left");
      // the audit log, in the order served: sync, ack (one row advanced), sync
      const ids = r.responses.map((x) => x.headers["x-qim-request-id"]);
      const audit = (await server.audit.tail(1000)).filter((e) => ids.includes(e.requestId));
      assert.deepEqual(audit.map((e) => e.rpc), ["POST /message/sync", "POST /message/syncack", "POST /message/sync"]);
      assert.match(audit[1]!.detail, /^1 row\(s\) advanced/);
      // the connection stays open for the next request
      const again = await exchange(s, sync(user), 1);
      assert.equal(again.responses[0]!.body, "[]");
    } finally {
      s.destroy();
    }
    const state = await cmdOf(server.runtime).stateOf(tenant, user, 10);
    assert.deepEqual(state.map((x) => [x.channel.channelId, x.readSeq]), [[`${source}____cmd`, 1]]);
  });

  it("two connections of one user, interleaved: A sync (message), B sync (message), A ack (applies B's, the latest), B sync [], A sync []", async () => {
    const user = randomUUID() as Uuid;
    const source = await sendTo(user);
    const [a, b] = [await open(), await open()];
    try {
      assert.deepEqual(seqs((await exchange(a, sync(user), 1)).responses[0]!), [`${source}#1`]);
      // not acked yet: B's sync answers it again, and is now the latest generation
      assert.deepEqual(seqs((await exchange(b, sync(user), 1)).responses[0]!), [`${source}#1`]);
      const acked = (await exchange(a, ack(user), 1)).responses[0]!;
      assert.equal(acked.status, 200);
      assert.equal((await exchange(b, sync(user), 1)).responses[0]!.body, "[]");
      assert.equal((await exchange(a, sync(user), 1)).responses[0]!.body, "[]");
    } finally {
      a.destroy();
      b.destroy();
    }
  });

  it("two connections of one user, each [sync, syncack, sync] in one write at the same time: both acks 200, both last syncs [], the message answered at least once, read seq 1", async () => {
    // Whatever order the owner serves the six calls in (each connection's three in order), the
    // first ack applies the latest sync before it, which answered the message (nothing was acked
    // yet), so every sync after it — both third ones — answers [].
    const user = randomUUID() as Uuid;
    const source = await sendTo(user);
    const [a, b] = [await open(), await open()];
    try {
      const [ra, rb] = await Promise.all([
        exchange(a, Buffer.concat([sync(user), ack(user), sync(user)]), 3),
        exchange(b, Buffer.concat([sync(user), ack(user), sync(user)]), 3),
      ]);
      for (const r of [ra, rb]) {
        assert.deepEqual(r.responses.map((x) => x.status), [200, 200, 200]);
        assert.deepEqual(JSON.parse(r.responses[1]!.body), { status: 200 });
        assert.equal(r.responses[2]!.body, "[]");
      }
      const firsts = [ra, rb].map((r) => seqs(r.responses[0]!));
      assert.ok(firsts.some((f) => f.length === 1 && f[0] === `${source}#1`), `a first sync answered the message: ${JSON.stringify(firsts)}`);
      for (const f of firsts) assert.ok(f.length === 0 || (f.length === 1 && f[0] === `${source}#1`), JSON.stringify(f));
    } finally {
      a.destroy();
      b.destroy();
    }
    const state = await cmdOf(server.runtime).stateOf(tenant, user, 10);
    assert.deepEqual(state.map((x) => [x.channel.channelId, x.readSeq]), [[`${source}____cmd`, 1]]);
  });

  it(`a body of ${CMD_HTTP_MAX_BODY_BYTES} + 1 bytes (raw socket, Content-Length): HTTP/1.1 413 with its JSON and Connection: close, then a clean close; audited REQUEST_TOO_LARGE`, async () => {
    assert.equal(CMD_HTTP_MAX_BODY_BYTES, 65_536, "the documented limit: 64 KiB");
    const s = await open();
    // a sync pipelined after the big body is not served: the 413 closes the connection
    const r = await exchange(s, Buffer.concat([post("/message/sync", Buffer.alloc(65_537, "x")), sync(randomUUID())]), 1, true);
    s.destroy();
    assert.equal(r.error, null, "no reset: the answer was not destroyed under the client");
    assert.equal(r.ended, true, "the server closed the connection after its answer");
    assert.equal(r.responses.length, 1, "only the 413: the request after it was not served");
    const refused = r.responses[0]!;
    assert.equal(refused.status, 413);
    assert.equal(refused.headers.connection, "close");
    assert.equal(refused.headers["x-qim-error-code"], "REQUEST_TOO_LARGE");
    assert.deepEqual(JSON.parse(refused.body), { msg: "request body over 65536 bytes", status: 413 });
    const audit = (await server.audit.tail(1000)).find((e) => e.requestId === refused.headers["x-qim-request-id"]);
    assert.equal(audit?.result, "REQUEST_TOO_LARGE");
    assert.equal(audit?.rpc, "POST /message/sync");
  });

  it("a chunked body (no Content-Length) that passes the limit mid-stream: 413 the same way, clean close", async () => {
    const s = await open();
    const chunk = Buffer.alloc(40_000, "x");
    const chunked = Buffer.concat([
      Buffer.from("POST /message/syncack HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"),
      Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from("\r\n"),
      Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from("\r\n0\r\n\r\n"),
    ]);
    const r = await exchange(s, chunked, 1, true);
    s.destroy();
    assert.equal(r.error, null);
    assert.equal(r.ended, true);
    assert.deepEqual(r.responses.map((x) => [x.status, x.headers.connection, JSON.parse(x.body)]), [[413, "close", { msg: "request body over 65536 bytes", status: 413 }]]);
    const audit = (await server.audit.tail(1000)).find((e) => e.requestId === r.responses[0]!.headers["x-qim-request-id"]);
    assert.equal(audit?.result, "REQUEST_TOO_LARGE");
    assert.equal(audit?.rpc, "POST /message/syncack");
  });

  it("curl --data-binary @file: 65537 bytes → 413 with the JSON body; exactly 65536 bytes (a valid sync, padded) → 200 []", async () => {
    const big = path.join(dir, "big.json");
    await writeFile(big, Buffer.alloc(65_537, "x"));
    const curl = (file: string) => runClient("curl", [
      "-sS", "--max-time", CURL_MAX_TIME_S, "--cacert", files.ca.certPath, "--cert", service.cert, "--key", service.key,
      "-H", "content-type: application/json", "--data-binary", `@${file}`, "-w", "\n%{http_code}", `https://localhost:${server.sync!.port}/message/sync`,
    ]);
    const refused = await curl(big);
    assert.equal(refused.code, 0, `curl exit ${refused.code}: ${refused.stderr}`);
    const nl = refused.stdout.lastIndexOf("\n");
    assert.equal(refused.stdout.slice(nl + 1), "413");
    assert.deepEqual(JSON.parse(refused.stdout.slice(0, nl)), { msg: "request body over 65536 bytes", status: 413 });

    const head = JSON.stringify({ uid: randomUUID(), limit: 10, pad: "" });
    const exact = `${head.slice(0, -2)}${"p".repeat(65_536 - head.length)}"}`;
    assert.equal(Buffer.byteLength(exact), 65_536);
    const atLimit = path.join(dir, "exact.json");
    await writeFile(atLimit, exact);
    const served = await curl(atLimit);
    assert.equal(served.code, 0, served.stderr);
    assert.equal(served.stdout, "[]\n200", "a body of exactly the limit is served: a user with nothing to sync");
  });
});
