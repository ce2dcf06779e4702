/** A device connection driven frame by frame, for the gateway's tests (the `ws` client). */
import assert from "node:assert/strict";
import WebSocket from "ws";
import { Frame } from "../../admin-api/gen/qim/client/v1/frames.js";

export type Body = NonNullable<Frame["body"]>;

/** A frame's body as text for an assertion's message (its uint64 fields are bigints). */
export const show = (x: unknown) => JSON.stringify(x, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v));

/** A device connection driven frame by frame. */
export class Device {
  private readonly inbox: Frame[] = [];
  private waiters: (() => void)[] = [];
  closed: { code: number; reason: string } | null = null;
  private nextId = 0n;
  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data: Buffer) => {
      this.inbox.push(Frame.decode(data));
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

