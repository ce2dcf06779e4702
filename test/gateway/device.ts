/** A device connection driven frame by frame, for the gateway's tests (the `ws` client). */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import WebSocket from "ws";
import { Frame } from "../../admin-api/gen/qim/client/v1/frames.js";
import { writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { ok, run } from "../e2e/qimctl.js";
import { startRedis, type RedisServer } from "../harness/redis.js";
import { startServerProcess, type ServerProcess } from "../reliability/server-process.js";

export type Body = NonNullable<Frame["body"]>;

/** A frame's body as text for an assertion's message (its uint64 fields are bigints). */
export const show = (x: unknown) => JSON.stringify(x, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v));

/** A device connection driven frame by frame. */
export class Device {
  private readonly inbox: Frame[] = [];
  private waiters: (() => void)[] = [];
  closed: { code: number; reason: string } | null = null;
  /** Every frame received with when (performance.now()), never taken: what a test counts per second. */
  readonly received: { at: number; frame: Frame }[] = [];
  private nextId = 0n;
  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data: Buffer) => {
      const f = Frame.decode(data);
      this.inbox.push(f);
      this.received.push({ at: performance.now(), frame: f });
      for (const w of this.waiters.splice(0)) w();
    });
    ws.on("close", (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      for (const w of this.waiters.splice(0)) w();
    });
  }

  static open(url: string, ca: Buffer, token: string | null): Promise<Device | { status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, ["qim.client.v1"], { ca, headers: token === null ? {} : { authorization: `Bearer ${token}` }, perMessageDeflate: false });
      ws.once("open", () => resolve(new Device(ws)));
      ws.once("unexpected-response", (_req, res) => {
        let body = "";
        res.on("data", (c: Buffer) => (body += c.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
      ws.once("error", reject);
    });
  }

  /** The frames of one type received and not yet taken by next(), in arrival order. */
  pushes<C extends NonNullable<Body["$case"]>>(kind: C): Extract<Body, { $case: C }>[] {
    return this.inbox.filter((f) => f.body?.$case === kind).map((f) => f.body as Extract<Body, { $case: C }>);
  }

  /** Stops reading the socket (a slow device: the node's writes queue up), and reads again. */
  pause(): void {
    (this.ws as unknown as { _socket: { pause(): void } })._socket.pause();
  }

  resume(): void {
    (this.ws as unknown as { _socket: { resume(): void } })._socket.resume();
  }

  sendRaw(bytes: Buffer | string, binary = true): void {
    this.ws.send(bytes, { binary });
  }

  async request(body: Body): Promise<Frame> {
    const id = ++this.nextId;
    this.ws.send(Frame.encode({ requestId: id, body }).finish());
    return this.next((f) => f.requestId === id);
  }

  async next(match: (f: Frame) => boolean): Promise<Frame> {
    for (let i = 0; i < 400; i++) {
      const at = this.inbox.findIndex(match);
      if (at >= 0) return this.inbox.splice(at, 1)[0]!;
      if (this.closed) throw new Error(`closed ${this.closed.code} ${this.closed.reason} before the answer`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, 50);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
    throw new Error("no answer");
  }

  async whenClosed(): Promise<{ code: number; reason: string }> {
    for (let i = 0; i < 400 && !this.closed; i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(this.closed, "the node closed the connection");
    return this.closed!;
  }
}


/** The gateway's URL as the node logged it, with the host its test certificate names. */
export async function gatewayUrl(proc: ServerProcess): Promise<string> {
  return /client gateway on (wss:\/\/\S+)/.exec(await proc.waitForLog(/client gateway on /))![1]!.replace("127.0.0.1", "localhost");
}

/** One real node with the client gateway: its own redis-server, the test PKI, a token key file made by the real qimctl, and an operator context of a fresh tenant. */
export interface GatewayNode {
  dir: string;
  pki: TestPkiFiles;
  ca: Buffer;
  redis: RedisServer;
  server: ServerProcess;
  url: string;
  context: string;
  tenant: string;
  stop(): Promise<void>;
}

/** `extraArgs`: more node flags, or a function of the node's temporary directory that gives them (a --data-dir inside it). */
export async function startGatewayNode(prefix: string, extraArgs: string[] | ((dir: string) => string[]) = []): Promise<GatewayNode> {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  const pki = await writeTestPki(path.join(dir, "pki"));
  const redis = await startRedis();
  const keys = path.join(dir, "token-keys.json");
  ok(await run(["token", "keygen", "--keys", keys]), "token keygen");
  const server = await startServerProcess({ redisAddr: redis.addr, pki, auditLog: path.join(dir, "audit.log"), extraArgs: ["--gateway-listen", "127.0.0.1:0", "--tokens-keys", keys, ...(typeof extraArgs === "function" ? extraArgs(dir) : extraArgs)] });
  const url = await gatewayUrl(server);
  const tenant = randomUUID();
  const context = path.join(dir, "context.json");
  writeFileSync(context, JSON.stringify({ endpoint: server.endpoint, ca: pki.ca.certPath, cert: pki.operator.certPath, key: pki.operator.keyPath, tenant }));
  return {
    dir, pki, ca: readFileSync(pki.ca.certPath), redis, server, url, context, tenant,
    async stop() {
      await server.stop();
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
