/**
 * One device connection of the client gateway (issue 27): frames in, answers out, each request
 * through the node's one pipeline with the device's principal (its user and device, role device,
 * the token id as its fingerprint). Every request frame gets exactly one answer: its own answer
 * frame or an ERROR with the same request_id. A connection's SENDs commit in the order they came;
 * other requests run beside them, at most GATEWAY_MAX_IN_FLIGHT at a time.
 */
import { hash } from "node:crypto";
import type { WebSocket } from "ws";
import {
  decodeHistoryEntry, GATEWAY_MAX_ANSWER_PAYLOAD_BYTES, GATEWAY_RECONNECT_GRACE_MS, GATEWAY_PUSH_HARD_MARK_BYTES, GATEWAY_PUSH_SOFT_MARK_BYTES, type DeliveryItem, type DeviceConnection,
  GATEWAY_AUTH_TIMEOUT_MS, GATEWAY_IDLE_TIMEOUT_MS, GATEWAY_MARK_READ_BURST, GATEWAY_MARK_READ_RATE, GATEWAY_MAX_IN_FLIGHT, GATEWAY_REFUSAL_BURST, GATEWAY_REFUSAL_RATE,
  GATEWAY_REQUEST_BURST, GATEWAY_REQUEST_RATE, HISTORY_PAGE_DEFAULT, HISTORY_PAGE_LIMIT, InvalidArgumentError, listConversations, pageLimit,
  parseUuid, PermissionDeniedError, SESSION_PAGE_DEFAULT, SESSION_PAGE_LIMIT, type BadgeState, type ConversationListEntry, type EngineRuntime, type HistoryRecord, type SessionFrame,
  type AnchorResult, type ConversationEvent, type RegistrySnapshot, type UserEvent, type Uuid, wireTargetSeq,
  FailedPreconditionError, QimError, ROOM_REPLAY_PAGE_LIMIT, type RoomConnection, type RoomPush, type RoomRecord, type RoomWindow, type PresenceConnection, type PresenceState,
} from "../../../core/index.js";
import { Frame, RoomWindow as RoomWindowFrame, type Badge, type Message, type Reactions, type SessionEntry, type SessionList } from "../../../admin-api/gen/qim/client/v1/frames.js";
import { TokenBucket, type KeyedRateLimiter } from "../../../core/support/index.js";
import { DEVICE_ROLE, type Principal } from "../../pipeline/auth.js";
import { mapError } from "../../pipeline/errors.js";
import type { Pipeline } from "../../pipeline/pipeline.js";
import type { DeviceIdentity } from "./auth.js";
import { gatewayMetrics } from "./metrics.js";

type Body = NonNullable<Frame["body"]>;
type Case = Body["$case"];
type BodyOf<C extends Case> = Extract<Body, { $case: C }>;

/** The close codes of docs/gateway.md (4000–4999 are the application's). */
export const CLOSE = {
  /** A text frame: frames are binary protobuf. */
  UNSUPPORTED_DATA: 1003,
  /** Bytes that are not a Frame. */
  INVALID_FRAME: 1007,
  /** The node is stopping (a RECONNECT frame went first). */
  GOING_AWAY: 1001,
  /** More than GATEWAY_PUSH_HARD_MARK_BYTES queued on the socket: the device reads nothing. */
  SLOW: 4429,
  /** No AUTH within GATEWAY_AUTH_TIMEOUT_MS, or a request before AUTH. */
  AUTH_REQUIRED: 4401,
  /** AUTH named another device than the token's. */
  WRONG_DEVICE: 4403,
  /** Closed by an operator (qimctl connections kick); the token stays valid unless revoked. */
  KICKED: 4410,
  /** Silent for GATEWAY_IDLE_TIMEOUT_MS. */
  IDLE: 4408,
  /** Kept sending past its RATE_LIMITED answers (more than GATEWAY_REFUSAL_BURST refusals, then GATEWAY_REFUSAL_RATE/s). */
  FLOODING: 1008,
} as const;

/** Frames a device may send, each with what it is answered with. */
const REQUESTS = new Set<Case>([
  "auth", "ping", "send", "pullHistory", "markRead", "pullSessionList", "leaveGroup", "recall", "edit", "react", "typing", "rtcSignal", "roomJoin", "roomReplay", "roomSend", "roomLeave", "presenceSub",
]);

/** A client_msg_no: the device's idempotency key for a SEND, 1–64 printable ASCII characters. */
const CLIENT_MSG_NO = /^[\x21-\x7e]{1,64}$/;

export interface ConnectionDeps {
  runtime: EngineRuntime;
  pipeline: Pipeline;
  log(line: string): void;
  /** Called once when AUTH succeeded: from then on the connection gets pushes. */
  onAuthed(conn: GatewayConnection): void;
  /** Called once when the connection is gone. */
  onClose(conn: GatewayConnection): void;
  /** per_user_msg_rate: the node's SEND buckets, one per user (all of the user's devices on this node). */
  userSends: KeyedRateLimiter;
  /** per_user_reaction_rate: the node's REACT buckets, one per user, counted apart from userSends. */
  userReactions: KeyedRateLimiter;
  /** The user's badge, one read shared by the connections that ask at the same time (a read sync reaches each of a user's devices here). */
  badge(tenant: Uuid, user: Uuid): Promise<BadgeState>;
}

/** A device's socket as the gateway corks it (net.Socket or tls.TLSSocket). */
export interface CorkableSocket {
  cork(): void;
  uncork(): void;
}

/** Sockets corked during this turn of the event loop, uncorked together at its end (one setImmediate for all). */
const corked = new Set<CorkableSocket>();
let uncorkScheduled = false;

function uncorkAll(): void {
  uncorkScheduled = false;
  const sockets = [...corked];
  corked.clear();
  for (const s of sockets) {
    try {
      s.uncork();
    } catch {
      // a socket torn down meanwhile: its close is handled where it closes; the others still go out
    }
  }
}

/**
 * Holds a socket's writes until the end of this turn of the event loop: the turn's frames to one
 * device (a batch's messages, a SESSION_DELTA with its BADGE_UPDATE, an answer with a push) leave
 * in one write — one syscall, one TLS flush — instead of one each. Socket writes were 16 % of the
 * node's CPU at 200 msg/s in bench/loadgen, one writev per frame. `ws` corks each frame itself;
 * corks nest, so the frame's own uncork leaves it held until this one.
 */
function corkForTurn(socket: CorkableSocket): void {
  if (corked.has(socket)) return;
  corked.add(socket);
  socket.cork();
  if (!uncorkScheduled) {
    uncorkScheduled = true;
    setImmediate(uncorkAll);
  }
}

/** The connection's flood limits, one object each for every connection (a bucket keeps its limit). */
const MARK_READ_LIMIT = { rate: GATEWAY_MARK_READ_RATE, burst: GATEWAY_MARK_READ_BURST };
const REQUEST_LIMIT = { rate: GATEWAY_REQUEST_RATE, burst: GATEWAY_REQUEST_BURST };
const REFUSAL_LIMIT = { rate: GATEWAY_REFUSAL_RATE, burst: GATEWAY_REFUSAL_BURST };

export class GatewayConnection implements DeviceConnection, RoomConnection, PresenceConnection {
  readonly since = Date.now();
  authed = false;
  /** Pushes stopped (past the soft mark) until the device's next PULL_SESSION_LIST. */
  private lagging = false;
  framesIn = 0;
  framesOut = 0;
  private inFlight = 0;
  // flood limits (docs/gateway.md "Flood limits"): what a request may cost, and what refusals may
  private readonly markReads = new TokenBucket(MARK_READ_LIMIT);
  private readonly requests = new TokenBucket(REQUEST_LIMIT);
  private readonly refusals = new TokenBucket(REFUSAL_LIMIT);
  // what only a connection with requests needs is made for them: an idle device holds neither
  // (the controller's signal and its two maps were about 0.6 KiB of every idle connection's heap)
  /** The SENDs' arrival order, made at the first SEND. */
  private sendOrder: ArrivalOrder | null = null;
  /** Aborted when the connection goes: made for the requests in flight, let go when none is. */
  private inFlightGone: AbortController | null = null;
  private gone = false;
  private authTimer: NodeJS.Timeout | undefined;
  /** Ends the SESSION_DELTA / BADGE_UPDATE watch (core/session-view) opened at AUTH. */
  private unwatch: (() => void) | null = null;
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly principal: Principal;

  constructor(private readonly ws: WebSocket, readonly identity: DeviceIdentity, readonly remote: string, private readonly deps: ConnectionDeps,
    /** The upgraded socket under `ws` (corked per turn: corkForTurn). */
    private readonly socket: CorkableSocket) {
    this.principal = { name: `${identity.user}/${identity.device}`, role: DEVICE_ROLE, fingerprint: identity.tokenId };
    this.authTimer = setTimeout(() => this.close(CLOSE.AUTH_REQUIRED, "no AUTH frame in time"), GATEWAY_AUTH_TIMEOUT_MS);
    this.touch();
    ws.on("message", (data, isBinary) => this.onMessage(data as Buffer, isBinary));
    ws.once("close", () => {
      clearTimeout(this.authTimer);
      clearTimeout(this.idleTimer);
      this.gone = true;
      this.inFlightGone?.abort();
      this.unwatch?.();
      this.unwatch = null;
      // out of its rooms (their writers hear the new counts with the next refresh)
      deps.runtime.rooms.closed(this);
      deps.runtime.presence.closed(this);
      deps.onClose(this);
    });
    ws.on("error", () => undefined);
  }

  get tenant(): Uuid {
    return this.identity.tenant;
  }

  get user(): Uuid {
    return this.identity.user;
  }

  get device(): string {
    return this.identity.device;
  }

  /**
   * A committed message (core/delivery): encoded once per node (the item keeps the frame), written
   * unless the connection is past its push budget. Past the soft mark: one RESYNC and no pushes
   * until the device pulls its list; past the hard mark: closed.
   */
  push(item: DeliveryItem): boolean {
    if (!this.admit()) return false;
    item.encoded ??= Frame.encode({
      requestId: 0n,
      body: { $case: "message", message: messageOf(item.conversation, { ...decodeHistoryEntry(item.entry), conversationSeq: item.conversationSeq }, this.typesOf()) },
    }).finish();
    this.framesOut++;
    gatewayMetrics.frames.inc({ direction: "out", type: "message" });
    this.out(item.encoded);
    return true;
  }

  /**
   * A user event (core/delivery): RTC_SIGNAL_PUSH, a call's signal; or READ_SYNC when another device of the user read a conversation,
   * then BADGE_UPDATE with the badge read again (spec 003 §2.2: the other devices' unread goes down
   * by a recompute, not by a negative delta), whichever node the read was marked on.
   */
  pushEvent(event: UserEvent): boolean {
    if (!this.admit()) return false;
    if (event.kind === "rtc") {
      // a call's signal (spec 003 §5): passed through as it came
      this.write(0n, {
        $case: "rtcSignalPush",
        rtcSignalPush: {
          group: event.conversation, fromUser: event.fromUser, fromDevice: event.fromDevice, callId: event.callId, kind: event.signal,
          signalPayload: Buffer.from(event.payload.buffer, event.payload.byteOffset, event.payload.byteLength),
        },
      });
      return true;
    }
    this.write(0n, { $case: "readSync", readSync: { group: event.conversation, readSeq: BigInt(event.readSeq) } });
    const { tenant, user } = this.identity;
    this.deps.badge(tenant, user).then((b) => {
      if (this.admit()) this.write(0n, { $case: "badgeUpdate", badgeUpdate: { badge: badgeOf(b), listVersion: BigInt(b.version) } });
    }, (err: unknown) => this.deps.log(`gateway: badge after a read sync: ${err instanceof Error ? err.message : String(err)}`));
    return true;
  }

  /**
   * A conversation event (core/delivery, after this node's merge window): REACTION_UPDATE with a
   * message's absolute counts, or TYPING_UPDATE; encoded once per node (the event keeps the frame).
   */
  pushConversationEvent(event: ConversationEvent): boolean {
    if (!this.admit()) return false;
    const body: Body = event.kind === "reaction"
      ? { $case: "reactionUpdate", reactionUpdate: { group: event.conversation, conversationSeq: BigInt(event.conversationSeq), reactions: reactionsOf(event) } }
      : { $case: "typingUpdate", typingUpdate: { group: event.conversation, user: event.user, typing: event.typing } };
    event.encoded ??= Frame.encode({ requestId: 0n, body }).finish();
    this.framesOut++;
    gatewayMetrics.frames.inc({ direction: "out", type: body.$case });
    this.out(event.encoded);
    return true;
  }

  /**
   * A ROOM_BATCH (core/rooms, at most room_outbound_frame_rate a second): each window's bytes are
   * made once for every connection that gets it; the frame is its header and the windows as they are.
   */
  pushRooms(windows: readonly RoomPush[]): boolean {
    if (!this.admit()) return false;
    this.framesOut++;
    gatewayMetrics.frames.inc({ direction: "out", type: "roomBatch" });
    // written now, not corked for the turn: the rooms' flush counts a turn's writes by their cost
    // (a socket already corked this turn takes it with its other frames)
    this.ws.send(roomBatchFrame(windows));
    return true;
  }

  /** A PRESENCE_UPDATE (core/presence, at most one per PRESENCE_PUSH_MERGE_WINDOW_MS): watched users' states, absolute. */
  pushPresence(states: readonly PresenceState[]): boolean {
    if (!this.admit()) return false;
    this.write(0n, { $case: "presenceUpdate", presenceUpdate: { states: [...states] } });
    return true;
  }

  /** A frame of the user's SESSION_DELTA stream (absolute values, spec 002 §5), under the push budget. */
  private pushSession(frame: SessionFrame): void {
    if (!this.admit()) return;
    if (frame.kind === "badge") {
      this.write(0n, { $case: "badgeUpdate", badgeUpdate: { badge: { totalUnread: BigInt(frame.totalUnread), totalMention: BigInt(frame.totalMention), mutedUnread: BigInt(frame.mutedUnread) }, listVersion: BigInt(frame.version) } });
      return;
    }
    const r = frame.row;
    this.write(0n, {
      $case: "sessionDelta",
      sessionDelta: {
        previousVersion: BigInt(frame.previousVersion), version: BigInt(frame.version),
        changed: r.deleted ? [] : [{ group: r.conversation, unread: BigInt(r.unread), mentions: BigInt(r.mentions), pinned: r.pinRank !== null && r.pinRank !== undefined, muted: r.muted, readSeq: 0n, headSeq: BigInt(r.headSeq) }],
        removed: r.deleted ? [r.conversation] : [],
      },
    });
  }

  /** Whether a push may go out now (open, authenticated, within its budget); applies the marks. */
  private admit(): boolean {
    if (!this.authed || this.ws.readyState !== this.ws.OPEN) return false;
    if (this.lagging) {
      gatewayMetrics.pushesHeld.inc({ reason: "lagging" });
      return false;
    }
    const buffered = this.ws.bufferedAmount;
    if (buffered > GATEWAY_PUSH_HARD_MARK_BYTES) {
      gatewayMetrics.backPressure.inc({ mark: "hard" });
      this.close(CLOSE.SLOW, "too much queued: the device reads nothing");
      return false;
    }
    if (buffered > GATEWAY_PUSH_SOFT_MARK_BYTES) {
      gatewayMetrics.backPressure.inc({ mark: "soft" });
      this.lagging = true;
      this.write(0n, { $case: "resync", resync: { reason: "pushes stopped: the device fell behind; pull the session list and history to catch up", bufferedBytes: BigInt(buffered) } });
      return false;
    }
    return true;
  }

  /** Bytes queued on the socket, not yet written (what a slow device holds back). */
  get buffered(): number {
    return this.ws.bufferedAmount;
  }

  reconnect(afterMs: number, reason: string): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.write(0n, { $case: "reconnect", reconnect: { afterMs, reason } });
    // a device that does not go by itself is closed a while after its turn
    setTimeout(() => {
      if (this.ws.readyState === this.ws.OPEN) this.close(CLOSE.GOING_AWAY, "the node is draining");
    }, afterMs + GATEWAY_RECONNECT_GRACE_MS).unref();
  }

  kick(): void {
    this.close(CLOSE.KICKED, "closed by an operator");
  }

  close(code: number, reason: string): void {
    gatewayMetrics.closes.inc({ code: String(code) });
    this.ws.close(code, reason.slice(0, 120));
  }

  private touch(): void {
    // each frame moves the one timer on (refresh) rather than making a new one; a closed
    // connection's was cleared and stays so
    if (this.gone) return;
    if (this.idleTimer) {
      this.idleTimer.refresh();
      return;
    }
    this.idleTimer = setTimeout(() => this.close(CLOSE.IDLE, "silent for too long"), GATEWAY_IDLE_TIMEOUT_MS);
    this.idleTimer.unref();
  }

  private write(requestId: bigint, body: Body): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    // answers too: a device that keeps asking and reads nothing holds no more than the hard mark
    if (this.ws.bufferedAmount > GATEWAY_PUSH_HARD_MARK_BYTES) {
      gatewayMetrics.backPressure.inc({ mark: "hard" });
      this.close(CLOSE.SLOW, "too much queued: the device reads nothing");
      return;
    }
    this.framesOut++;
    gatewayMetrics.frames.inc({ direction: "out", type: body.$case });
    this.out(Frame.encode({ requestId, body }).finish());
  }

  /** Every frame to the device goes out here: with the turn's other frames to it, in one write. */
  private out(bytes: Uint8Array): void {
    corkForTurn(this.socket);
    this.ws.send(bytes);
  }

  private error(requestId: bigint, code: string, message: string, field = "", retryAfterMs = 0): void {
    this.write(requestId, { $case: "error", error: { code, message, field, retryAfterMs } });
  }

  private onMessage(data: Buffer, isBinary: boolean): void {
    this.touch();
    this.framesIn++;
    if (!isBinary) {
      this.close(CLOSE.UNSUPPORTED_DATA, "frames are binary protobuf (proto/qim/client/v1)");
      return;
    }
    let frame: Frame;
    try {
      frame = Frame.decode(data);
    } catch (err) {
      this.error(0n, "MALFORMED_FRAME", `not a Frame: ${err instanceof Error ? err.message : String(err)}`.slice(0, 200));
      this.close(CLOSE.INVALID_FRAME, "not a Frame");
      return;
    }
    const id = frame.requestId;
    const body = frame.body;
    gatewayMetrics.frames.inc({ direction: "in", type: body?.$case ?? "unknown" });
    if (!body) {
      this.error(id, "UNKNOWN_FRAME", "a frame type this node does not know (docs/gateway.md lists them)");
      return;
    }
    if (!REQUESTS.has(body.$case)) {
      this.error(id, "UNKNOWN_FRAME", `${body.$case} is sent by the node, not by a device`);
      return;
    }
    if (id === 0n) {
      this.error(0n, "INVALID_ARGUMENT", "a request needs a request_id other than 0", "request_id");
      return;
    }
    if (!this.authed && body.$case !== "auth") {
      this.error(id, "UNAUTHENTICATED", "the first frame of a connection is AUTH");
      this.close(CLOSE.AUTH_REQUIRED, "a request before AUTH");
      return;
    }
    if (this.inFlight >= GATEWAY_MAX_IN_FLIGHT) {
      this.refuse(id, "in_flight", `at most ${GATEWAY_MAX_IN_FLIGHT} requests of a connection are answered at a time; wait for an answer`, 100);
      return;
    }
    const wait = this.costOf(body.$case);
    if (wait > 0) {
      const [reason, what] = USER_MESSAGE_FRAMES.has(body.$case)
        ? ["send_rate", `at most ${this.deps.userSends.limitText} SENDs, ROOM_SENDs, RECALLs, EDITs and RTC_SIGNALs of a user together (per_user_msg_rate)`]
        : body.$case === "markRead" ? ["mark_read_rate", `at most ${GATEWAY_MARK_READ_RATE} MARK_READs per second (burst ${GATEWAY_MARK_READ_BURST})`]
          : body.$case === "react" ? ["reaction_rate", `at most ${this.deps.userReactions.limitText} REACTs of a user (per_user_reaction_rate)`]
            : ["request_rate", `at most ${GATEWAY_REQUEST_RATE} requests per second (burst ${GATEWAY_REQUEST_BURST})`];
      this.refuse(id, reason, `${what}: nothing was done; retry after retry_after_ms`, wait);
      return;
    }
    this.inFlight++;
    const done = () => {
      // no request left to cancel: the controller goes (the next request makes a new one)
      if (--this.inFlight === 0) this.inFlightGone = null;
    };
    // a connection's sends enter the engine in the order they came (each commit is not waited for)
    const ticket = body.$case === "send" ? (this.sendOrder ??= new ArrivalOrder()).ticket() : -1;
    void this.serve(id, body, ticket).finally(() => {
      if (ticket >= 0) this.sendOrder!.leave(ticket);
      done();
    });
  }

  /** The signal a request in flight is cancelled by when the connection goes (aborted already once it has). */
  private goneSignal(): AbortSignal {
    if (!this.inFlightGone) {
      this.inFlightGone = new AbortController();
      if (this.gone) this.inFlightGone.abort();
    }
    return this.inFlightGone.signal;
  }

  /** A request's token (0: taken), else the ms until its bucket has one: SENDs, RECALLs and EDITs the user's, MARK_READs and the rest the connection's. */
  private costOf(type: Case): number {
    // a RECALL or an EDIT writes an event to the log like a SEND: the same per-user budget
    // an RTC signal too (spec 003 §5: rtc_voip_push_daily_quota and per_user_msg_rate both count)
    if (USER_MESSAGE_FRAMES.has(type)) return this.deps.userSends.take(`${this.identity.tenant}/${this.identity.user}`);
    if (type === "react") return this.deps.userReactions.take(`${this.identity.tenant}/${this.identity.user}`);
    if (type === "markRead") return this.markReads.take();
    return this.requests.take();
  }

  /** RATE_LIMITED with when to retry; a connection that keeps earning refusals past its budget is closed (1008). */
  private refuse(id: bigint, reason: string, message: string, retryAfterMs: number): void {
    gatewayMetrics.refused.inc({ reason });
    if (this.refusals.take() > 0) {
      this.close(CLOSE.FLOODING, "flooding: requests kept coming past RATE_LIMITED answers");
      return;
    }
    this.error(id, "RATE_LIMITED", message, "", retryAfterMs);
  }

  /** One request through the pipeline; resolves once it is answered. */
  private serve(requestId: bigint, body: Body, ticket: number): Promise<void> {
    return new Promise((resolve) => {
      const answer = (b: Body) => {
        this.write(requestId, b);
        resolve();
      };
      this.deps.pipeline.run({
        rpc: `gateway ${body.$case}`, roles: [DEVICE_ROLE], mutates: false, principal: this.principal, arguments: () => ({}), signal: this.goneSignal(),
      }, {
        refuse: (m) => {
          this.error(requestId, m.domainCode, m.message, m.field ?? "");
          resolve();
        },
        failure: (err, rid, rpc) => {
          const m = mapError(err, rid);
          return {
            result: m.domainCode, detail: m.message,
            log: m.domainCode === "INTERNAL" ? `gateway request ${rid} ${rpc} failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}` : null,
            reply: () => {
              this.error(requestId, m.domainCode, m.message, m.field ?? "");
              resolve();
            },
          };
        },
      }, async () => {
        const out = await this.handle(body, ticket);
        return { answer: () => answer(out) };
      });
    });
  }

  private handle(body: Body, ticket: number): Promise<Body> {
    switch (body.$case) {
      case "auth": return this.auth(body);
      case "ping": return Promise.resolve({ $case: "pong", pong: { serverTimeMs: BigInt(Date.now()) } });
      case "send": return this.send(body, ticket);
      case "pullHistory": return this.pullHistory(body);
      case "pullSessionList": return this.pullSessionList(body);
      case "markRead": return this.markRead(body);
      case "leaveGroup": return this.leaveGroup(body);
      case "recall": return this.recall(body);
      case "edit": return this.edit(body);
      case "react": return this.react(body);
      case "typing": return this.typing(body);
      case "presenceSub": return this.presenceSub(body);
      case "rtcSignal": return this.rtcSignal(body);
      case "roomJoin": return this.roomJoin(body);
      case "roomReplay": return this.roomReplay(body);
      case "roomSend": return this.roomSend(body);
      case "roomLeave": return Promise.resolve({ $case: "roomLeaveAck", roomLeaveAck: { left: this.runtime.rooms.leave(this, parseUuid(body.roomLeave.room, "room")) } });
      default: throw new InvalidArgumentError("frame", `${body.$case} is not a request`);
    }
  }

  private async auth({ auth }: BodyOf<"auth">): Promise<Body> {
    const { tenant, user, device } = this.identity;
    if (auth.deviceId !== device) {
      setImmediate(() => this.close(CLOSE.WRONG_DEVICE, "AUTH names another device than the token"));
      throw new InvalidArgumentError("device_id", `the token was issued for device ${JSON.stringify(device)}, not ${JSON.stringify(auth.deviceId.slice(0, 64))}`);
    }
    if (this.authed) throw new InvalidArgumentError("auth", "this connection is authenticated already");
    const { runtime } = this;
    // a device's login is a reconcile trigger (spec 002 §3.4), at most once per RECONCILE_MIN_INTERVAL_MS per user
    await runtime.conversationList.service.reconcileBounded(tenant, user, "login");
    // the watch before the first page: a change between them arrives as a delta, never falls between
    this.unwatch = await runtime.sessionView.watch(tenant, user, (f) => this.pushSession(f));
    if (this.gone) {
      this.unwatch();
      this.unwatch = null;
    }
    const [badge, page] = await Promise.all([
      runtime.conversationList.service.badge(tenant, user),
      this.sessionPage(null, SESSION_PAGE_DEFAULT),
    ]);
    this.authed = true;
    clearTimeout(this.authTimer);
    this.authTimer = undefined; // a cleared timer held by the field is 120 bytes a connection for nothing
    this.deps.onAuthed(this);
    return {
      $case: "authOk",
      // one list version: the first page's (read before its rows), which SESSION_DELTA follows from
      authOk: { serverTimeMs: BigInt(Date.now()), tenant, user, deviceId: device, badge: badgeOf(badge), listVersion: page.listVersion, firstPage: page, idleTimeoutMs: GATEWAY_IDLE_TIMEOUT_MS },
    };
  }

  private get runtime(): EngineRuntime {
    return this.deps.runtime;
  }

  private async send({ send }: BodyOf<"send">, ticket: number): Promise<Body> {
    const { tenant, user } = this.identity;
    // the engine's send is synchronous up to its group commit's queue (FIFO per conversation): taking
    // the turn only for that part keeps the arrival order of a device's SENDs and lets 64 commit together
    await this.sendOrder!.enter(ticket);
    let pending;
    try {
      if (!CLIENT_MSG_NO.test(send.clientMsgNo)) throw new InvalidArgumentError("client_msg_no", "client_msg_no is 1 to 64 printable ASCII characters (the SEND's idempotency key)");
      const group = parseUuid(send.group, "group");
      pending = this.runtime.conversations.send({
        tenant, group, sender: user, payload: send.payload, contentType: send.contentType === "" ? "text/plain" : send.contentType,
        clientMessageId: clientMessageIdOf(tenant, user, group, send.clientMsgNo),
        ...(send.mentions.length > 0 ? { mentions: send.mentions } : {}),
      });
    } finally {
      this.sendOrder!.leave(ticket);
    }
    const r = await pending;
    return { $case: "sendAck", sendAck: { conversationSeq: BigInt(r.conversationSeq), messageId: r.messageId ?? "", duplicate: r.duplicate } };
  }

  private async pullHistory({ pullHistory: req }: BodyOf<"pullHistory">): Promise<Body> {
    const { tenant, user } = this.identity;
    const group = parseUuid(req.group, "group");
    // one below the engine's page limit: the read asks one more than the device did, to say `more`
    const limit = pageLimit(req.limit, { default: HISTORY_PAGE_DEFAULT, max: HISTORY_PAGE_LIMIT - 1 });
    if (req.afterSeq > BigInt(Number.MAX_SAFE_INTEGER)) throw new InvalidArgumentError("after_seq", "after_seq is at most 2^53-1");
    // one more than asked: whether more follow, without a second read
    const page = await this.runtime.conversations.history({ tenant, group, user, after: Number(req.afterSeq), limit: Number(limit) + 1 });
    const types = await this.runtime.messageTypes.current(tenant);
    let n = Math.min(page.records.length, Number(limit));
    // bounded in bytes too: the first record always, then while the payloads stay within the answer's budget
    let bytes = 0;
    for (let i = 0; i < n; i++) {
      bytes += page.records[i]!.payload.byteLength;
      if (i > 0 && bytes > GATEWAY_MAX_ANSWER_PAYLOAD_BYTES) {
        n = i;
        break;
      }
    }
    const more = page.records.length > n;
    const records = page.records.slice(0, n);
    // the reactions with the messages (spec 003 §4.2: a device offline while they changed reads them here)
    const reactions = await this.runtime.reactions.summaries(tenant, group, records.filter((r) => r.state !== "recalled").map((r) => r.conversationSeq));
    return {
      $case: "historyBatch",
      historyBatch: {
        group, earliestAvailableSeq: BigInt(page.earliestAvailableConversationSeq), more,
        messages: records.map((r) => {
          const m = messageOf(group, r, types);
          const s = reactions.get(r.conversationSeq);
          return s ? { ...m, reactions: reactionsOf(s) } : m;
        }),
      },
    };
  }

  /** The tenant's message types as held now (a push cannot wait for a read: the built-ins alone until the first read is done). */
  private typesOf(): Types {
    return this.runtime.messageTypes.peek(this.identity.tenant);
  }

  private async sessionPage(cursor: string | null, requested: number): Promise<SessionList> {
    const { tenant, user } = this.identity;
    const limit = pageLimit(requested, { default: SESSION_PAGE_DEFAULT, max: SESSION_PAGE_LIMIT });
    // the version first: a change between the two reads shows as a newer version next time, never as an older one
    const version = await this.runtime.conversationList.service.storedVersion(tenant, user);
    const page = await listConversations(this.runtime, tenant, user, { limit, cursor });
    const types = await this.runtime.messageTypes.current(tenant);
    return { entries: page.entries.filter((e) => !e.row.deleted).map((e) => sessionEntryOf(e, types)), nextCursor: page.nextCursor ?? "", listVersion: BigInt(version) };
  }

  private async pullSessionList({ pullSessionList: req }: BodyOf<"pullSessionList">): Promise<Body> {
    // a device that fell behind is catching up: what commits from here on is pushed again
    if (req.cursor === "") this.lagging = false;
    return { $case: "sessionList", sessionList: await this.sessionPage(req.cursor === "" ? null : req.cursor, req.limit) };
  }

  private async markRead({ markRead: req }: BodyOf<"markRead">): Promise<Body> {
    const { tenant, user } = this.identity;
    const group = parseUuid(req.group, "group");
    if (req.readSeq > BigInt(Number.MAX_SAFE_INTEGER)) throw new InvalidArgumentError("read_seq", "read_seq is at most 2^53-1");
    const r = await this.runtime.conversations.markRead({ tenant, group, user, seq: Number(req.readSeq) });
    // the user's other devices learn it once the merge window closes; this one has its answer
    this.runtime.delivery.readSync.mark(tenant, user, group, r.readConversationSeq, this.identity.device);
    const badge = await this.runtime.conversationList.service.badge(tenant, user);
    return { $case: "markReadAck", markReadAck: { readSeq: BigInt(r.readConversationSeq), badge: badgeOf(badge) } };
  }

  /** The user's own recall (spec 003 §2.3): within recall_self_window, of the user's own message. */
  private async recall({ recall: req }: BodyOf<"recall">): Promise<Body> {
    const { tenant, user } = this.identity;
    const group = parseUuid(req.group, "group");
    const r = await this.runtime.conversations.recall({ tenant, group, seq: wireTargetSeq(req.conversationSeq), user });
    return { $case: "anchorAck", anchorAck: anchorAckOf(r) };
  }

  /** The user's own edit: within edit_self_window; idempotent by client_msg_no like a SEND. */
  private async edit({ edit: req }: BodyOf<"edit">): Promise<Body> {
    const { tenant, user } = this.identity;
    if (!CLIENT_MSG_NO.test(req.clientMsgNo)) throw new InvalidArgumentError("client_msg_no", "client_msg_no is 1 to 64 printable ASCII characters (the EDIT's idempotency key)");
    const group = parseUuid(req.group, "group");
    const r = await this.runtime.conversations.edit({
      tenant, group, seq: wireTargetSeq(req.conversationSeq), user, payload: req.payload, clientMessageId: clientMessageIdOf(tenant, user, group, `edit:${req.clientMsgNo}`),
    });
    return { $case: "anchorAck", anchorAck: anchorAckOf(r) };
  }

  /** The user's reaction (spec 003 §4.1): per_user_reaction_rate, idempotent; the answer carries the message's counts. */
  private async react({ react: req }: BodyOf<"react">): Promise<Body> {
    const { tenant, user } = this.identity;
    const group = parseUuid(req.group, "group");
    const r = await this.runtime.reactions.react({ tenant, group, seq: wireTargetSeq(req.conversationSeq), user, key: req.reactionKey, remove: req.remove });
    return { $case: "reactAck", reactAck: { group, conversationSeq: req.conversationSeq, reactions: reactionsOf(r.summary), changed: r.changed } };
  }

  /**
   * The user is typing (spec 003 §2.1): an ACTIVE member's goes to the group's other members online
   * now, never stored; one saying the same as the user's last within TYPING_MIN_INTERVAL_MS is acked
   * and not passed on. Counted in the connection's request budget.
   */
  private async typing({ typing: req }: BodyOf<"typing">): Promise<Body> {
    const { tenant, user } = this.identity;
    const group = parseUuid(req.group, "group");
    // a repeat goes nowhere and reads nothing (it says no more than the user's own last TYPING did)
    if (this.runtime.delivery.typingUnchanged(tenant, group, user, req.typing)) return { $case: "typingAck", typingAck: { forwarded: false } };
    const [active] = await this.runtime.conversations.activeMembers(tenant, group, [user]);
    // ADR-0021 §3: a user cannot tell a missing group (or a dissolved one) from one they are not in
    if (!active) throw new PermissionDeniedError();
    this.runtime.delivery.typing(tenant, group, user, req.typing);
    return { $case: "typingAck", typingAck: { forwarded: true } };
  }

  /**
   * PRESENCE_SUB (spec 003 §2.1): watch whether members of a group the user is in are online, or
   * stop. The answer has their states now; changes come as PRESENCE_UPDATE. PRESENCE_SUB_RATE per
   * user and group refuses with RATE_LIMITED and when to retry; nothing changes on any refusal.
   */
  private async presenceSub({ presenceSub: req }: BodyOf<"presenceSub">): Promise<Body> {
    const group = parseUuid(req.group, "group");
    const users = req.users.map((u, i) => parseUuid(u, `users[${i}]`));
    if (req.unsubscribe) {
      const r = await this.runtime.presence.unsubscribe(this, group, users);
      return { $case: "presenceSubAck", presenceSubAck: { group, states: [], notMembers: [], removed: r.removed, subscriptions: r.subscriptions } };
    }
    try {
      const r = await this.runtime.presence.subscribe(this, this.identity.user, group, users);
      return { $case: "presenceSubAck", presenceSubAck: { group, states: r.states, notMembers: r.notMembers, removed: 0, subscriptions: r.subscriptions } };
    } catch (err) {
      if (!(err instanceof QimError) || err.code !== "RATE_LIMITED") throw err;
      gatewayMetrics.refused.inc({ reason: "presence_sub_rate" });
      return { $case: "error", error: { code: "RATE_LIMITED", message: err.message, field: "", retryAfterMs: Number(err.details.retryAfterMs ?? 1000) } };
    }
  }

  /** A call's signal to another member (spec 003 §5): passed through to their devices online; an INVITE to a callee offline goes to the push sink. */
  private async rtcSignal({ rtcSignal: req }: BodyOf<"rtcSignal">): Promise<Body> {
    const { tenant, user, device } = this.identity;
    const group = parseUuid(req.group, "group");
    const r = await this.runtime.rtc.signal({
      tenant, group, from: user, fromDevice: device, target: req.targetUser as Uuid, callId: req.callId, kind: req.kind, payload: req.signalPayload,
    });
    return { $case: "rtcSignalAck", rtcSignalAck: { callId: r.callId, outcome: r.outcome, devices: r.devices } };
  }

  /** ROOM_JOIN (spec 003 §1): into the room on this node (max_rooms_per_connection); the answer is the writer's window, replayed after a cursor when one is given. */
  private async roomJoin({ roomJoin: req }: BodyOf<"roomJoin">): Promise<Body> {
    const room = parseUuid(req.room, "room");
    const w = await this.runtime.rooms.join(this, room, req.afterRoomSeq);
    return { $case: "roomBatch", roomBatch: { windows: [roomWindowOf(w)] } };
  }

  /** ROOM_REPLAY (spec 003 §1.4): after a cursor, or replay_truncated with no events (jump to latest) — never an ERROR. */
  private async roomReplay({ roomReplay: req }: BodyOf<"roomReplay">): Promise<Body> {
    const room = parseUuid(req.room, "room");
    if (req.limit > ROOM_REPLAY_PAGE_LIMIT) throw new InvalidArgumentError("limit", `at most ${ROOM_REPLAY_PAGE_LIMIT} events a replay`);
    const w = await this.runtime.rooms.replay(this.identity.tenant, room, req.afterRoomSeq, req.limit === 0 ? ROOM_REPLAY_PAGE_LIMIT : req.limit);
    return { $case: "roomBatch", roomBatch: { windows: [roomWindowOf(w)] } };
  }

  /** ROOM_SEND: to a room this connection joined; the writer's room_msg_rate may refuse it (RATE_LIMITED with retry_after_ms). */
  private async roomSend({ roomSend: req }: BodyOf<"roomSend">): Promise<Body> {
    const { tenant, user, device } = this.identity;
    const room = parseUuid(req.room, "room");
    if (!CLIENT_MSG_NO.test(req.clientMsgNo)) throw new InvalidArgumentError("client_msg_no", "client_msg_no is 1 to 64 printable ASCII characters (names the message's id)");
    if (!this.runtime.rooms.local.has(this, room)) throw new FailedPreconditionError("join the room first (ROOM_JOIN): a connection sends only to rooms it is in");
    try {
      const r = await this.runtime.rooms.publish({
        tenant, room, sender: user, senderDevice: device, messageId: clientMessageIdOf(tenant, user, room, `room:${req.clientMsgNo}`),
        contentType: req.contentType === "" ? "text/plain" : req.contentType, payload: req.payload,
      });
      return { $case: "roomSendAck", roomSendAck: { roomSeq: r.roomSeq, messageId: r.messageId } };
    } catch (err) {
      // room_msg_rate (the writer's, maybe on another node): RATE_LIMITED with when to retry, like the node's own limits
      if (!(err instanceof QimError) || err.code !== "RATE_LIMITED") throw err;
      gatewayMetrics.refused.inc({ reason: "room_msg_rate" });
      return { $case: "error", error: { code: "RATE_LIMITED", message: err.message, field: "", retryAfterMs: Number(err.details.retryAfterMs ?? 1000) } };
    }
  }

  private async leaveGroup({ leaveGroup: req }: BodyOf<"leaveGroup">): Promise<Body> {
    const { tenant, user } = this.identity;
    const group = parseUuid(req.group, "group");
    const r = await this.runtime.conversations.leaveGroup({ tenant, group, user });
    return { $case: "memberListBatch", memberListBatch: { group, eventSeq: BigInt(r.eventConversationSeq ?? 0), memberVersion: BigInt(r.version) } };
  }
}

/**
 * The engine's client message id of a device's SEND: a UUID named by the tenant, the user, the
 * group and the device's client_msg_no (SHA-256, its first 16 bytes as a version-8 UUID), so that
 * a retried SEND is the engine's retry (the same id and content: the first commit's answer) and
 * two users' equal client_msg_no never meet.
 */
export function clientMessageIdOf(tenant: Uuid, user: Uuid, group: Uuid, clientMsgNo: string): string {
  // one-shot hash (no Hash object per SEND): the same SHA-256
  const h = hash("sha256", `qim.gateway.client-msg-no.v1\0${tenant}\0${user}\0${group}\0${clientMsgNo}`, "buffer");
  h[6] = (h[6]! & 0x0f) | 0x80;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString("hex");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

/** The frames that count as a user's messages in per_user_msg_rate (the user's SEND bucket on this node). */
const USER_MESSAGE_FRAMES = new Set<Case>(["send", "roomSend", "recall", "edit", "rtcSignal"]);

function roomEventOf(e: RoomRecord) {
  return {
    roomSeq: e.roomSeq, messageId: e.messageId, sender: e.sender, senderDevice: e.senderDevice, createdAtMs: BigInt(e.createdAt), contentType: e.contentType,
    payload: Buffer.from(e.payload.buffer, e.payload.byteOffset, e.payload.byteLength),
  };
}

function roomWindowOf(w: RoomWindow): RoomWindowFrame {
  return {
    room: w.room, roomEpoch: w.epoch, earliestReplayRoomSeq: w.earliest, latestRoomSeq: w.latest, replayTruncated: w.truncated, more: w.more,
    events: w.events.map(roomEventOf), online: w.online, promotedToGroup: w.promotedTo,
  };
}

/** A protobuf varint's bytes. */
function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}

/** Frame.room_batch (field 1026, length-delimited) and RoomBatch.windows (field 1), as protobuf writes them. */
const ROOM_BATCH_TAG = varint((1026 << 3) | 2);
const WINDOWS_TAG = (1 << 3) | 2;

/**
 * A ROOM_BATCH push from windows encoded once each (a window's bytes are kept on it for the room's
 * other connections): a Frame with request_id 0 is its room_batch field alone, and a RoomBatch is
 * its windows one after another, so the frame is a few header bytes around bytes made already.
 */
export function roomBatchFrame(windows: readonly RoomPush[]): Uint8Array {
  // the common case, a connection in one room with messages: the whole frame is the same for all its connections here
  if (windows.length === 1 && windows[0]!.frame) return windows[0]!.frame;
  const parts: Uint8Array[] = [];
  let body = 0;
  for (const w of windows) {
    w.encoded ??= RoomWindowFrame.encode(roomWindowOf(w)).finish();
    const head = Uint8Array.from([WINDOWS_TAG, ...varint(w.encoded.byteLength)]);
    parts.push(head, w.encoded);
    body += head.byteLength + w.encoded.byteLength;
  }
  const head = Uint8Array.from([...ROOM_BATCH_TAG, ...varint(body)]);
  const frame = Buffer.concat([head, ...parts], head.byteLength + body);
  if (windows.length === 1) windows[0]!.frame = frame;
  return frame;
}

function anchorAckOf(r: AnchorResult) {
  return { targetSeq: BigInt(r.targetSeq), eventSeq: BigInt(r.eventSeq), eventMessageId: r.eventMessageId ?? "", duplicate: r.duplicate };
}

/** A summary (or a pushed event's) as the frames carry it: absolute counts at summary_version. */
function reactionsOf(s: { version: number; counts: readonly { key: string; count: number }[] }): Reactions {
  return { summaryVersion: BigInt(s.version), counts: s.counts.map((c) => ({ key: c.key, count: BigInt(c.count) })) };
}

function badgeOf(b: BadgeState): Badge {
  return { totalUnread: BigInt(b.totalUnread), totalMention: BigInt(b.totalMention), mutedUnread: BigInt(b.mutedUnread) };
}

/** The message types a frame's `preview` comes from: the tenant's registry snapshot. */
type Types = Pick<RegistrySnapshot, "preview">;

function messageOf(group: string, r: HistoryRecord, types: Types): Message {
  return {
    group, conversationSeq: BigInt(r.conversationSeq), messageId: r.messageId, sender: r.senderId, createdAtMs: BigInt(r.createdAt),
    contentType: r.contentType, payload: Buffer.from(r.payload.buffer, r.payload.byteOffset, r.payload.byteLength), kind: r.kind, mentions: r.mentions ?? [],
    state: r.state ?? "", targetSeq: BigInt(r.target?.conversationSeq ?? 0), targetMessageId: r.target?.messageId ?? "",
    schemaVersion: r.custom?.schemaVersion ?? 0, hiddenFromTimeline: r.custom?.timelineVisible === false, preview: types.preview(r.contentType),
  };
}

function sessionEntryOf(e: ConversationListEntry, types: Types): SessionEntry {
  const s = e.summary;
  const group = e.row.conversation;
  return {
    group, unread: BigInt(s?.unread ?? 0), mentions: BigInt(e.row.mentions), pinned: e.row.pinRank !== null && e.row.pinRank !== undefined, muted: e.row.muted,
    ...(s?.head ? { head: messageOf(group, s.head, types) } : {}), readSeq: BigInt(s?.readConversationSeq ?? 0),
    headSeq: BigInt(s?.head?.conversationSeq ?? e.row.headSeq),
  };
}

/**
 * The arrival order of a connection's SENDs: each takes a ticket when its frame arrives and enters
 * the engine only when every earlier ticket has entered or is done (refused, answered, the
 * connection gone), so that a device's messages to one conversation get seqs in the order it sent
 * them while their commits overlap.
 */
class ArrivalOrder {
  private issued = 0;
  private turn = 0;
  private readonly finished = new Set<number>();
  private readonly waiting = new Map<number, () => void>();

  ticket(): number {
    return this.issued++;
  }

  enter(t: number): Promise<void> {
    if (t === this.turn) return Promise.resolve();
    return new Promise((resolve) => this.waiting.set(t, resolve));
  }

  /** The ticket is done with its turn (idempotent). */
  leave(t: number): void {
    if (t < this.turn) return;
    this.finished.add(t);
    while (this.finished.delete(this.turn)) this.turn++;
    const w = this.waiting.get(this.turn);
    if (w) {
      this.waiting.delete(this.turn);
      w();
    }
  }
}
