import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import * as Flags from "@oclif/core/flags";
import WebSocket from "ws";
import { Frame } from "../../admin-api/gen/qim/client/v1/frames.js";
import { UNKNOWN_TYPE_PREVIEW } from "../../core/registry/index.js";
import { ConnectedCommand } from "../base.js";
import { EXIT, UsageError } from "../exit-codes.js";
import { visible, visibleLines } from "../format.js";
import { gatewayUrl, uuid } from "../validate.js";
import { deviceId, tokenTtl } from "./token/issue.js";

type Body = NonNullable<Frame["body"]>;

/** One line of `qimctl client --output json`: a frame from the node as it arrived. */
export interface ClientLine {
  at: string;
  /** The frame type (the Frame oneof's name: authOk, message, sendAck, readSync, …). */
  frame: string;
  /** 0 for a push. */
  requestId: number;
  /** The frame's fields as JSON (free-form: each type its own; payloads as text or {base64}). */
  body?: unknown;
}

/** Close codes after which the client exits 0: a normal close, the node going away (drain, restart). */
const CLEAN_CLOSES = new Set([1000, 1001]);

/** A frame's body as JSON: bigints as numbers when safe (else strings), payloads as text when printable UTF-8, else base64. */
function plain(v: unknown): unknown {
  if (typeof v === "bigint") return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
  if (v instanceof Uint8Array) {
    const text = Buffer.from(v).toString("utf8");
    return /^[^\x00-\x08\x0e-\x1f\x7f\ufffd]*$/.test(text) ? text : { base64: Buffer.from(v).toString("base64") };
  }
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

/**
 * What this reference client shows of a message (`shown`, added to every MESSAGE it prints, pushed
 * or in a HISTORY_BATCH or a SESSION_LIST head): the text of a text message, "[recalled]" for a
 * recalled one, and for any other content type — a custom type it does not render — the node's
 * `preview` (the type's preview_template) or the generic placeholder. A type it does not know
 * never fails a frame, a batch or the connection (spec 003 C-6).
 */
function withShown(m: Record<string, unknown>): Record<string, unknown> {
  const ct = String(m.contentType ?? "");
  const shown = m.state === "recalled" ? "[recalled]"
    : ct === "text" || ct.startsWith("text/") ? (typeof m.payload === "string" ? m.payload : UNKNOWN_TYPE_PREVIEW)
    : (typeof m.preview === "string" && m.preview !== "" ? m.preview : UNKNOWN_TYPE_PREVIEW);
  return { ...m, shown };
}

/** The frame's body as printed: plain JSON, each message with what the client shows of it. */
function printable(f: Frame): Record<string, unknown> {
  const type = f.body!.$case;
  const body = plain((f.body as Record<string, unknown>)[type]) as Record<string, unknown>;
  if (type === "message") return withShown(body);
  if (type === "historyBatch" && Array.isArray(body.messages)) return { ...body, messages: (body.messages as Record<string, unknown>[]).map(withShown) };
  if ((type === "sessionList" || type === "authOk") && body) {
    const list = (type === "authOk" ? body.firstPage : body) as Record<string, unknown> | undefined;
    if (list && Array.isArray(list.entries)) {
      const entries = (list.entries as Record<string, unknown>[]).map((e) => (e.head ? { ...e, head: withShown(e.head as Record<string, unknown>) } : e));
      return type === "authOk" ? { ...body, firstPage: { ...list, entries } } : { ...body, entries };
    }
  }
  return body;
}

/** One frame as a line of text: time, type, request id, then the body's fields. */
function frameLine(at: Date, f: Frame): string {
  const type = f.body?.$case ?? "unknown";
  const body = f.body ? printable(f) : {};
  const fields = Object.entries(body).map(([k, v]) => `${k}=${typeof v === "string" ? JSON.stringify(v) : JSON.stringify(v)}`).join(" ");
  return `${at.toISOString().slice(11, 23)}  ${type}${f.requestId !== 0n ? ` #${f.requestId}` : ""}  ${fields}`;
}

export default class Client extends ConnectedCommand<typeof Client> {
  static override summary = "Connect to the client gateway as a user's device and print every frame as it arrives: see as a user, live.";
  static override description = `The reference device client (docs/gateway.md). It gets a device token for --as/--device through the admin API of the current context (audited like token issue; or --token-file), connects to the node's gateway (--url wss://HOST:PORT, TLS with the context's CA; ws:// only to a loopback address), sends AUTH and prints AUTH_OK, then every frame as it arrives: one line each (time, type, #request id, fields; payloads as text when printable), or one JSON object per line with --output json.

Commands on stdin, one per line: send GROUP TEXT…  |  read GROUP SEQ  |  recall GROUP SEQ  |  edit GROUP SEQ TEXT…  |  react GROUP SEQ KEY  |  unreact GROUP SEQ KEY  |  typing GROUP on|off  |  watch GROUP USER…  |  unwatch GROUP [USER…] (presence)  |  call GROUP USER [PAYLOAD…]  |  answer|decline|cancel|hangup GROUP USER CALL_ID  |  join ROOM [AFTER_ROOM_SEQ]  |  say ROOM TEXT…  |  replay ROOM AFTER_ROOM_SEQ  |  part ROOM (chat rooms)  |  leave GROUP  |  history GROUP [AFTER] [LIMIT]  |  list [CURSOR]  |  ping  |  quit. A line it cannot read prints an error on stderr and the client goes on. Every message it prints carries "shown": the text of a text message, [recalled], or for a content type it does not render the node's preview (the type's preview_template) or [unsupported message] — such a message never fails a frame, a batch or the connection. --send GROUP:TEXT (repeatable), --duration S and --exit-after N are for scripts without stdin.

Exit codes: 0 quit, end of stdin, --duration or --exit-after reached, or closed by the node with 1000/1001 (a drain's RECONNECT, a restart); 1 closed by the node with another code (printed); 2 bad flags; 5 the gateway or the admin API unreachable; 6 the token refused at the upgrade (HTTP 401) or a token could not be issued.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --as 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --device phone --url wss://localhost:7800",
    {
      description: "A script: send one message, print what arrives for 10 seconds as JSON lines",
      command: "<%= config.bin %> <%= command.id %> --as 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --device ci --url wss://localhost:7800 --send 5f0c…:hello --duration 10 --output json",
    },
  ];
  static override flags = {
    as: Flags.string({ required: true, description: "the user (UUID) the device belongs to" }),
    device: Flags.string({ char: "d", required: true, description: "the device id (1 to 64 of A-Z a-z 0-9 . _ : -)" }),
    url: Flags.string({ description: "the node's gateway: wss://HOST:PORT (ws:// only to a loopback address); default: the context's gateway (dev up writes it)" }),
    "token-file": Flags.string({ description: "a device token in a file, instead of issuing one through the admin API" }),
    ttl: Flags.string({ description: "the issued token's lifetime (90m, 12h, 7d; default 1h)", default: "1h" }),
    send: Flags.string({ multiple: true, description: "GROUP:TEXT to send once connected (repeatable)" }),
    duration: Flags.integer({ min: 1, description: "quit after this many seconds" }),
    "exit-after": Flags.integer({ min: 1, description: "quit after this many frames from the node (AUTH_OK included)" }),
  };

  async run(): Promise<void> {
    this.jsonLines = true;
    const user = uuid("--as", this.flags.as);
    const device = deviceId("--device", this.flags.device);
    const ttlMs = tokenTtl("--ttl", this.flags.ttl);
    const fromContext = this.flags.url === undefined ? this.connectionSettings().gateway : undefined;
    if (this.flags.url === undefined && !fromContext) throw new UsageError("--url", "give the node's gateway (wss://HOST:PORT): the context names none (qimctl context set NAME --gateway URL; dev up sets it)");
    const url = new URL(gatewayUrl(fromContext ? `--url (${fromContext.origin})` : "--url", this.flags.url ?? fromContext!.value));
    const sends = (this.flags.send ?? []).map((s) => {
      const i = s.indexOf(":");
      if (i < 0) throw new UsageError("--send", `GROUP:TEXT, got ${JSON.stringify(s.slice(0, 80))}`);
      return { group: uuid("--send", s.slice(0, i)), text: s.slice(i + 1) };
    });
    let token: string;
    if (this.flags["token-file"]) {
      token = readFileSync(this.flags["token-file"], "utf8").trim();
    } else {
      const tenant = this.tenant();
      const { client } = await this.connect();
      token = (await client.issueToken({ tenant, user, device, ttlMs: BigInt(ttlMs), dryRun: false })).token;
    }
    const s = this.connectionSettings();
    const ca = s.ca ? readFileSync(s.ca.value) : undefined;
    const json = this.jsonEnabled();
    const print = (f: Frame) => {
      const at = new Date();
      const line: ClientLine = { at: at.toISOString(), frame: f.body?.$case ?? "unknown", requestId: Number(f.requestId), ...(f.body ? { body: printable(f) } : {}) };
      if (json) process.stdout.write(`${JSON.stringify(line)}\n`);
      // the node relays what other users wrote: no control or bidi character reaches the terminal as one
      else process.stdout.write(`${visible(frameLine(at, f))}\n`);
    };
    const say = (line: string) => process.stderr.write(`${visibleLines(line)}\n`);

    const ws = new WebSocket(url, ["qim.client.v1"], { ...(ca ? { ca } : {}), headers: { authorization: `Bearer ${token}` }, perMessageDeflate: false });
    const opened = await new Promise<{ ok: true } | { ok: false; status: number; body: string; error?: string }>((resolve) => {
      ws.once("open", () => resolve({ ok: true }));
      ws.once("unexpected-response", (_req, res) => {
        let body = "";
        res.on("data", (c: Buffer) => (body += c.toString()));
        res.on("end", () => resolve({ ok: false, status: res.statusCode ?? 0, body }));
      });
      ws.once("error", (err) => resolve({ ok: false, status: 0, body: "", error: err.message }));
    });
    if (!opened.ok) {
      say(opened.status === 0 ? `cannot reach the gateway at ${url.href}: ${opened.error}` : `the gateway refused the upgrade: HTTP ${opened.status} ${opened.body.slice(0, 300)}`);
      this.exit(opened.status === 401 ? EXIT.AUTH : EXIT.CONNECTION);
    }
    let nextId = 0n;
    let frames = 0;
    // the node answers requests side by side: nothing goes before AUTH has been answered
    let authed: () => void = () => {};
    const afterAuth = new Promise<void>((resolve) => (authed = resolve));
    const request = (body: Body) => ws.send(Frame.encode({ requestId: ++nextId, body }).finish());
    const ended = new Promise<number>((resolve) => {
      ws.on("message", (data: Buffer) => {
        let f: Frame;
        try {
          f = Frame.decode(data);
        } catch {
          say("the node sent bytes that are not a Frame");
          return;
        }
        print(f);
        if (f.requestId === 1n && f.body?.$case === "authOk") authed();
        if (this.flags["exit-after"] !== undefined && ++frames >= this.flags["exit-after"]) ws.close(1000);
      });
      ws.once("close", (code, reason) => {
        if (!CLEAN_CLOSES.has(code) && code !== 1005) say(`closed by the node: ${code} ${reason.toString()}`);
        resolve(CLEAN_CLOSES.has(code) || code === 1005 ? EXIT.OK : EXIT.INTERNAL);
      });
    });
    request({ $case: "auth", auth: { deviceId: device, clientVersion: `qimctl ${this.config.version}` } });
    let n = 0;
    const msgNo = () => `qimctl-${device}-${Date.now().toString(36)}-${++n}`;
    await Promise.race([afterAuth, ended]);
    for (const x of sends) request({ $case: "send", send: { clientMsgNo: msgNo(), group: x.group, payload: Buffer.from(x.text, "utf8"), contentType: "text", mentions: [] } });
    const command = (line: string) => {
      const [verb, ...rest] = line.trim().split(/\s+/);
      try {
        switch (verb) {
          case undefined: case "": return;
          case "send": {
            const m = /^\s*send\s+(\S+)\s+(.*)$/.exec(line);
            if (!m) throw new Error("send GROUP TEXT");
            request({ $case: "send", send: { clientMsgNo: msgNo(), group: uuid("GROUP", m[1]!), payload: Buffer.from(m[2]!, "utf8"), contentType: "text", mentions: [] } });
            return;
          }
          case "read": {
            if (rest.length !== 2 || !/^\d{1,15}$/.test(rest[1]!)) throw new Error("read GROUP SEQ");
            request({ $case: "markRead", markRead: { group: uuid("GROUP", rest[0]!), readSeq: BigInt(rest[1]!) } });
            return;
          }
          case "recall": {
            if (rest.length !== 2 || !/^\d{1,15}$/.test(rest[1]!)) throw new Error("recall GROUP SEQ");
            request({ $case: "recall", recall: { group: uuid("GROUP", rest[0]!), conversationSeq: BigInt(rest[1]!) } });
            return;
          }
          case "edit": {
            const m = /^\s*edit\s+(\S+)\s+(\d{1,15})\s+(.*)$/.exec(line);
            if (!m) throw new Error("edit GROUP SEQ TEXT");
            request({ $case: "edit", edit: { clientMsgNo: msgNo(), group: uuid("GROUP", m[1]!), conversationSeq: BigInt(m[2]!), payload: Buffer.from(m[3]!, "utf8") } });
            return;
          }
          case "react": case "unreact": {
            if (rest.length !== 3 || !/^\d{1,15}$/.test(rest[1]!)) throw new Error(`${verb} GROUP SEQ KEY`);
            request({ $case: "react", react: { group: uuid("GROUP", rest[0]!), conversationSeq: BigInt(rest[1]!), reactionKey: rest[2]!, remove: verb === "unreact" } });
            return;
          }
          case "typing": {
            if (rest.length !== 2 || !["on", "off"].includes(rest[1]!)) throw new Error("typing GROUP on|off");
            request({ $case: "typing", typing: { group: uuid("GROUP", rest[0]!), typing: rest[1] === "on" } });
            return;
          }
          case "watch": case "unwatch": {
            // presence (docs/gateway.md "Presence"): watch GROUP USER… | unwatch GROUP [USER…] (every user through the group when none)
            if (rest.length < (verb === "watch" ? 2 : 1)) throw new Error(verb === "watch" ? "watch GROUP USER…" : "unwatch GROUP [USER…]");
            request({ $case: "presenceSub", presenceSub: { group: uuid("GROUP", rest[0]!), users: rest.slice(1).map((u) => uuid("USER", u)), unsubscribe: verb === "unwatch" } });
            return;
          }
          case "call": case "answer": case "decline": case "cancel": case "hangup": {
            // call GROUP USER [PAYLOAD…] starts a call (its id is printed in the ack); the others name it: answer GROUP USER CALL_ID
            const kinds = { call: 1, answer: 2, decline: 3, cancel: 4, hangup: 5 } as const;
            const m = verb === "call" ? /^\s*call\s+(\S+)\s+(\S+)\s*(.*)$/.exec(line) : new RegExp(`^\\s*${verb}\\s+(\\S+)\\s+(\\S+)\\s+(\\S+)\\s*$`).exec(line);
            if (!m) throw new Error(verb === "call" ? "call GROUP USER [PAYLOAD…]" : `${verb} GROUP USER CALL_ID`);
            request({
              $case: "rtcSignal",
              rtcSignal: { group: uuid("GROUP", m[1]!), targetUser: uuid("USER", m[2]!), callId: verb === "call" ? randomUUID() : m[3]!, kind: kinds[verb], signalPayload: Buffer.from(verb === "call" ? m[3] ?? "" : "", "utf8") },
            });
            return;
          }
          case "join": case "replay": {
            // a chat room (docs/rooms.md): join ROOM [AFTER_ROOM_SEQ] | replay ROOM AFTER_ROOM_SEQ
            if (rest.length < (verb === "join" ? 1 : 2) || rest.length > 2 || (rest[1] !== undefined && !/^\d{1,20}$/.test(rest[1]))) throw new Error(`${verb} ROOM ${verb === "join" ? "[AFTER_ROOM_SEQ]" : "AFTER_ROOM_SEQ"}`);
            const room = uuid("ROOM", rest[0]!);
            const after = BigInt(rest[1] ?? 0);
            request(verb === "join" ? { $case: "roomJoin", roomJoin: { room, afterRoomSeq: after } } : { $case: "roomReplay", roomReplay: { room, afterRoomSeq: after, limit: 0 } });
            return;
          }
          case "say": {
            const m = /^\s*say\s+(\S+)\s+(.*)$/.exec(line);
            if (!m) throw new Error("say ROOM TEXT");
            request({ $case: "roomSend", roomSend: { room: uuid("ROOM", m[1]!), clientMsgNo: msgNo(), contentType: "text/plain", payload: Buffer.from(m[2]!, "utf8") } });
            return;
          }
          case "part": {
            if (rest.length !== 1) throw new Error("part ROOM");
            request({ $case: "roomLeave", roomLeave: { room: uuid("ROOM", rest[0]!) } });
            return;
          }
          case "leave": {
            if (rest.length !== 1) throw new Error("leave GROUP");
            request({ $case: "leaveGroup", leaveGroup: { group: uuid("GROUP", rest[0]!) } });
            return;
          }
          case "history": {
            if (rest.length < 1 || rest.length > 3 || !rest.slice(1).every((x) => /^\d{1,15}$/.test(x))) throw new Error("history GROUP [AFTER] [LIMIT]");
            request({ $case: "pullHistory", pullHistory: { group: uuid("GROUP", rest[0]!), afterSeq: BigInt(rest[1] ?? 0), limit: Number(rest[2] ?? 0) } });
            return;
          }
          case "list": {
            request({ $case: "pullSessionList", pullSessionList: { cursor: rest[0] ?? "", limit: 0 } });
            return;
          }
          case "ping": request({ $case: "ping", ping: {} }); return;
          case "quit": ws.close(1000); return;
          default: throw new Error(`unknown command ${JSON.stringify(verb.slice(0, 20))}: send, read, recall, edit, react, unreact, typing, call, answer, decline, cancel, hangup, join, say, replay, part, leave, history, list, ping, quit`);
        }
      } catch (err) {
        say(`error: ${err instanceof Error ? err.message : String(err)}`);
      }
    };
    let rl: ReturnType<typeof createInterface> | null = null;
    if (!process.stdin.isTTY || this.flags.duration === undefined) {
      rl = createInterface({ input: process.stdin });
      rl.on("line", (line) => void afterAuth.then(() => command(line)));
      // the end of stdin ends the session, unless a duration says how long to stay
      rl.on("close", () => { if (this.flags.duration === undefined && this.flags["exit-after"] === undefined) ws.close(1000); });
    }
    if (this.flags.duration !== undefined) setTimeout(() => ws.close(1000), this.flags.duration * 1000).unref();
    const code = await ended;
    // stdin open (a quit typed, a drain) would keep the process alive
    rl?.close();
    process.stdin.destroy();
    if (code !== EXIT.OK) this.exit(code);
  }
}
