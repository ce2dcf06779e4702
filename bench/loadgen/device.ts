/** One load-generator device: a `ws` connection that records every MESSAGE it gets and answers requests by id. */
import WebSocket from "ws";
import { Frame } from "../../admin-api/gen/qim/client/v1/frames.js";
import { GATEWAY_IDLE_TIMEOUT_MS } from "../../core/index.js";
import type { Arrival } from "./checker.js";

type Body = NonNullable<Frame["body"]>;

/** How long a request may wait for its answer before the load generator counts it failed. */
export const LOADGEN_REQUEST_TIMEOUT_MS = 30_000;

/**
 * A device that has sent nothing for this long PINGs, as a real client does: the node closes a
 * connection silent for GATEWAY_IDLE_TIMEOUT_MS (4408), and a bench's idle devices outlive that.
 */
export const LOADGEN_PING_AFTER_MS = GATEWAY_IDLE_TIMEOUT_MS / 3;

export class LoadDevice {
  /** Open devices of this process, checked by one timer for PINGs (not a timer each). */
  private static readonly live = new Set<LoadDevice>();
  private static heartbeat: NodeJS.Timeout | null = null;

  readonly arrivals: Arrival[] = [];
  /** When this device last sent a frame (ms). */
  private sentAt = Date.now();
  inFlight = 0;
  /** Bytes of every frame received (bench/gateway's fanout sizes its baseline's frames from it). */
  bytesIn = 0;
  /** ROOM_BATCH pushes received (bench/rooms): frames, the events in them, the last one's arrival (ms), and each frame's arrival when `times` is set. */
  readonly rooms: { frames: number; events: number; lastAt: number; times: number[] | null } = { frames: 0, events: 0, lastAt: 0, times: null };
  /** PRESENCE_UPDATE pushes received (bench/presence): frames and the states in them. */
  readonly presence = { frames: 0, states: 0 };
  private nextId = 0n;
  private readonly pending = new Map<bigint, { resolve: (f: Frame) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  closed: string | null = null;

  private constructor(readonly ws: WebSocket, readonly user: string, readonly device: string) {
    ws.on("message", (data: Buffer) => {
      const at = Date.now();
      this.bytesIn += data.length;
      const f = Frame.decode(data);
      if (f.body?.$case === "message") {
        const m = f.body.message;
        this.arrivals.push({ group: m.group, seq: Number(m.conversationSeq), messageId: m.messageId, kind: m.kind, createdAtMs: Number(m.createdAtMs), arrivedAtMs: at });
        return;
      }
      if (f.requestId === 0n && f.body?.$case === "roomBatch") {
        this.rooms.frames++;
        for (const w of f.body.roomBatch.windows) this.rooms.events += w.events.length;
        this.rooms.lastAt = at;
        this.rooms.times?.push(performance.now());
        return;
      }
      if (f.requestId === 0n && f.body?.$case === "presenceUpdate") {
        this.presence.frames++;
        this.presence.states += f.body.presenceUpdate.states.length;
        return;
      }
      const p = f.requestId === 0n ? undefined : this.pending.get(f.requestId);
      if (p) {
        this.pending.delete(f.requestId);
        clearTimeout(p.timer);
        p.resolve(f);
      }
    });
    ws.on("close", (code, reason) => {
      this.closed = `${code} ${reason.toString()}`;
      LoadDevice.live.delete(this);
      for (const [id, p] of this.pending) {
        this.pending.delete(id);
        clearTimeout(p.timer);
        p.reject(new Error(`${device}: closed ${this.closed}`));
      }
    });
  }

  /** Connects with `token` and authenticates as `device`. */
  static async open(url: string, ca: Buffer, token: string, user: string, device: string): Promise<LoadDevice> {
    const ws = await new Promise<WebSocket>((resolve, reject) => {
      const w = new WebSocket(url, ["qim.client.v1"], { ca, headers: { authorization: `Bearer ${token}` }, perMessageDeflate: false });
      w.once("open", () => resolve(w));
      w.once("unexpected-response", (_req, res) => reject(new Error(`${device}: upgrade refused with HTTP ${res.statusCode}`)));
      w.once("error", reject);
    });
    const d = new LoadDevice(ws, user, device);
    LoadDevice.watch(d);
    const a = await d.request({ $case: "auth", auth: { deviceId: device, clientVersion: "qim-loadgen" } });
    if (a.body?.$case !== "authOk") throw new Error(`${device}: AUTH answered ${a.body?.$case ?? "nothing"}`);
    return d;
  }

  /** Keeps `d` from going silent for GATEWAY_IDLE_TIMEOUT_MS: one timer for every device of this process. */
  private static watch(d: LoadDevice): void {
    if (d.closed) return;
    LoadDevice.live.add(d);
    if (LoadDevice.heartbeat !== null) return;
    LoadDevice.heartbeat = setInterval(() => {
      const due = Date.now() - LOADGEN_PING_AFTER_MS;
      for (const x of LoadDevice.live) if (x.sentAt <= due) x.request({ $case: "ping", ping: {} }).catch(() => undefined);
      if (LoadDevice.live.size === 0) {
        clearInterval(LoadDevice.heartbeat!);
        LoadDevice.heartbeat = null;
      }
    }, LOADGEN_PING_AFTER_MS / 10);
    LoadDevice.heartbeat.unref();
  }

  request(body: Body): Promise<Frame> {
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new Error(`${this.device}: closed ${this.closed}`));
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${this.device}: no answer to ${body.$case} within ${LOADGEN_REQUEST_TIMEOUT_MS} ms`));
      }, LOADGEN_REQUEST_TIMEOUT_MS);
      this.pending.set(id, { resolve, reject, timer });
      this.sentAt = Date.now();
      this.ws.send(Frame.encode({ requestId: id, body }).finish());
    });
  }

  /** Stops reading the socket (a slow device: what the node writes queues up on its side). */
  pause(): void {
    (this.ws as unknown as { _socket: { pause(): void } })._socket.pause();
  }

  close(): void {
    this.ws.terminate();
  }
}

/** Opens `count` devices, `concurrency` handshakes at a time (a TLS handshake and a token check each). */
export async function openDevices<T = LoadDevice>(count: number, concurrency: number, open: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(count);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, async () => {
    for (let i = next++; i < count; i = next++) out[i] = await open(i);
  }));
  return out;
}
