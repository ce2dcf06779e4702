/**
 * The dashboard's data layer: one ObserveService.Watch stream at a time, reconnected with a
 * bounded backoff when it fails, and each snapshot handed on with the rates since the previous
 * one (across reconnections). Plain TypeScript: the TUI and the line printer both consume it.
 */
import type { Snapshot, WatchStream } from "../../admin-api/client.js";
import { classifyUnavailable, GRPC_STATUS } from "../exit-codes.js";
import { rates, snapshotResult, type ConnectionState, type DashboardSnapshot, type Rates } from "./model.js";

export interface SnapshotView {
  snapshot: DashboardSnapshot;
  /** Since the snapshot before it (across reconnections); null for the first one (model.ts rates). */
  rates: Rates | null;
}

export interface FeedListener {
  snapshot(view: SnapshotView): void;
  state(state: ConnectionState): void;
  /** An error that retrying cannot fix (see `retryable`); the feed has stopped. */
  fatal(err: unknown): void;
}

export interface FeedOptions {
  /** Opens one stream (client.watch of admin-api/client.ts). */
  open(intervalMs: number, onSnapshot: (s: Snapshot) => void): WatchStream;
  intervalMs: number;
  /** Reconnect delays: initialMs after the first failure, doubling up to maxMs (default 500 → 5,000). */
  backoff?: { initialMs: number; maxMs: number };
  /**
   * A stream silent for this long is dropped and reconnected (a server or network that hangs
   * without closing the connection). Default: three intervals plus 5 s.
   */
  staleAfterMs?: number;
  /** The message shown for a failure (cli/exit-codes.ts classifyError in the command). */
  describe(err: unknown): string;
  /**
   * Whether to reconnect after a failure (default: `retryable` below). May settle later: the
   * command probes an ambiguous UNAVAILABLE (cli/tls-probe.ts) before it answers, and the feed
   * waits for the answer before it reports the loss or schedules a retry.
   */
  retryable?: (err: unknown) => boolean | Promise<boolean>;
}

export const DEFAULT_BACKOFF = { initialMs: 500, maxMs: 5000 } as const;

/** gRPC statuses a retry cannot fix: the request, the role, or a server without ObserveService. */
const FATAL = new Set<number>([
  GRPC_STATUS.INVALID_ARGUMENT, GRPC_STATUS.NOT_FOUND, GRPC_STATUS.PERMISSION_DENIED, GRPC_STATUS.FAILED_PRECONDITION,
  GRPC_STATUS.OUT_OF_RANGE, GRPC_STATUS.UNIMPLEMENTED, GRPC_STATUS.UNAUTHENTICATED,
]);

/**
 * Whether to reconnect after this failure. Everything is retried (a server away, restarting,
 * shutting down, its store unreachable) except the statuses above and a TLS handshake that
 * certainly refused our certificate or that we refused (a TLS alert, an untrusted server).
 * grpc-js words a server hanging up on our certificate like a network fault ("Failed to
 * connect"); only a probe tells them apart, and `certificateRefused` is its verdict (without one,
 * such a failure is retried).
 */
export function retryable(err: unknown, opts: { insecure?: boolean; certificateRefused?: boolean } = {}): boolean {
  const e = err as { code?: unknown; details?: unknown };
  if (typeof e?.code !== "number") return true;
  if (FATAL.has(e.code)) return false;
  if (e.code === GRPC_STATUS.UNAVAILABLE && typeof e.details === "string") {
    const ctx = { certificateRefused: opts.certificateRefused ?? false, ...(opts.insecure !== undefined ? { insecure: opts.insecure } : {}) };
    return classifyUnavailable(e.details, ctx) === "unreachable";
  }
  return true;
}

export class DashboardFeed {
  private stopped = false;
  private failures = 0;
  private last: DashboardSnapshot | null = null;
  private stream: WatchStream | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private staleTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly opts: FeedOptions,
    private readonly listener: FeedListener,
  ) {}

  start(): void {
    this.listener.state({ kind: "connecting" });
    this.attempt();
  }

  /** Cancels the stream and any pending reconnect; nothing is reported afterwards. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.staleTimer);
    this.stream?.cancel();
    this.stream = undefined;
  }

  private attempt(): void {
    if (this.stopped) return;
    let over = false;
    let connected = false;
    const staleAfterMs = this.opts.staleAfterMs ?? this.opts.intervalMs * 3 + 5000;
    const armStale = () => {
      clearTimeout(this.staleTimer);
      this.staleTimer = setTimeout(() => {
        fail(new Error(`no snapshot for ${staleAfterMs / 1000} s`));
        stream.cancel();
      }, staleAfterMs);
    };
    // each attempt reports its end once, whichever comes first: the stream's end or the stale timer
    const fail = (err: unknown) => {
      if (over) return;
      over = true;
      this.lost(err);
    };
    const stream = this.opts.open(this.opts.intervalMs, (s) => {
      if (over || this.stopped) return;
      armStale();
      if (!connected) {
        connected = true;
        this.failures = 0;
        this.listener.state({ kind: "connected" });
      }
      let snapshot: DashboardSnapshot;
      try {
        snapshot = snapshotResult(s);
      } catch (err) {
        fail(err);
        stream.cancel();
        return;
      }
      const view = { snapshot, rates: rates(this.last, snapshot) };
      this.last = snapshot;
      this.listener.snapshot(view);
    });
    this.stream = stream;
    armStale();
    stream.ended.then(() => fail(new Error("the server ended the stream")), fail);
  }

  private lost(err: unknown): void {
    clearTimeout(this.staleTimer);
    this.stream = undefined;
    if (this.stopped) return;
    const verdict = (this.opts.retryable ?? retryable)(err);
    if (typeof verdict === "boolean") this.decided(err, verdict);
    else verdict.then((again) => this.decided(err, again), (probeErr: unknown) => this.decided(probeErr, false));
  }

  private decided(err: unknown, again: boolean): void {
    if (this.stopped) return;
    if (!again) {
      this.stopped = true;
      this.listener.fatal(err);
      return;
    }
    this.failures++;
    const { initialMs, maxMs } = this.opts.backoff ?? DEFAULT_BACKOFF;
    const retryInMs = Math.min(maxMs, initialMs * 2 ** (this.failures - 1));
    this.listener.state({ kind: "disconnected", error: this.opts.describe(err), attempt: this.failures, retryInMs });
    this.retryTimer = setTimeout(() => this.attempt(), retryInMs);
  }
}
