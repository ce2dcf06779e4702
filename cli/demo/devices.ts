/**
 * A device of the demo: one WebSocket to the stack's client gateway with a device token, driven
 * frame by frame (the same frames `qimctl client` prints). It keeps every frame it was sent so that
 * the scenario can check what arrived and what did not.
 */
import WebSocket from "ws";
import { Frame } from "../../admin-api/gen/qim/client/v1/frames.js";

export type Body = NonNullable<Frame["body"]>;
type Kind = NonNullable<Body["$case"]>;

export class DemoDevice {
  /** Every frame received, in arrival order. */
  readonly received: Frame[] = [];
  private waiters: (() => void)[] = [];
  private closed: { code: number; reason: string } | null = null;
  private nextId = 0n;

  private constructor(private readonly ws: WebSocket) {
    ws.on("message", (data: Buffer) => {
      this.received.push(Frame.decode(data));
      this.wake();
    });
    ws.on("close", (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      this.wake();
    });
  }

  /** Connects with the token (checked at the upgrade) and sends AUTH; resolves once AUTH_OK arrived. */
  static async connect(url: string, ca: Buffer, token: string, deviceId: string, timeoutMs: number): Promise<{ device: DemoDevice; authOk: Extract<Body, { $case: "authOk" }>["authOk"] }> {
    const ws = await new Promise<WebSocket>((resolve, reject) => {
      const socket = new WebSocket(url, ["qim.client.v1"], { ca, headers: { authorization: `Bearer ${token}` }, perMessageDeflate: false, handshakeTimeout: timeoutMs });
      socket.once("open", () => resolve(socket));
      socket.once("unexpected-response", (_req, res) => reject(new Error(`the gateway at ${url} refused the upgrade: HTTP ${res.statusCode}`)));
      socket.once("error", (err) => reject(new Error(`cannot reach the gateway at ${url}: ${err.message}`)));
    });
    const device = new DemoDevice(ws);
    const answer = await device.request({ $case: "auth", auth: { deviceId, clientVersion: "qimctl-demo" } }, timeoutMs);
    if (answer.body?.$case !== "authOk") {
      device.close();
      throw new Error(`AUTH of ${deviceId} was answered ${describe(answer)}`);
    }
    return { device, authOk: answer.body.authOk };
  }

  /** Sends a request frame and waits for its one answer (its own type or ERROR). */
  async request(body: Body, timeoutMs: number): Promise<Frame> {
    const id = ++this.nextId;
    this.ws.send(Frame.encode({ requestId: id, body }).finish());
    return this.waitFor((f) => f.requestId === id, timeoutMs, `the answer to ${body.$case}`);
  }

  /** The pushes of one kind received so far. */
  pushes<K extends Kind>(kind: K): Extract<Body, { $case: K }>[] {
    return this.received.filter((f) => f.requestId === 0n && f.body?.$case === kind).map((f) => f.body as Extract<Body, { $case: K }>);
  }

  /** The first frame received (now or within timeoutMs) that matches. */
  async waitFor(match: (f: Frame) => boolean, timeoutMs: number, what: string): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.received.find(match);
      if (found) return found;
      if (this.closed) throw new Error(`the connection closed (${this.closed.code} ${this.closed.reason}) before ${what}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${what} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  close(): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close(1000, "demo done");
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}

/** A frame in a few words for a failed check: ERROR with its code, or the frame's type. */
export function describe(f: Frame): string {
  return f.body?.$case === "error" ? `ERROR ${f.body.error.code}: ${f.body.error.message}` : (f.body?.$case ?? "an empty frame");
}
