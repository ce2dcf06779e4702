/**
 * The open-ended stream of the pipeline (issue 25): a call that does not end by itself (the
 * dashboard's Watch, FollowAudit, WatchUser; next a gateway subscription) written once. It ends
 * when the client goes away, when its source ends it (the server stops, a follower falls behind),
 * or with an error (its source failed, or the caller was revoked: `admit` runs before every event
 * written). Events wait in order while the client does not read (the sink's backpressure); the
 * source sees how many wait (`queued`) to end a client that does not keep up.
 */

/** The transport side, as small as a gRPC server stream offers (a WebSocket adapter offers the same). */
export interface EventSink<Ev> {
  readonly cancelled: boolean;
  /** false: the transport buffers are full; wait for "drain" before writing more. */
  write(ev: Ev): boolean;
  once(event: "drain", listener: () => void): unknown;
  on(event: "cancelled", listener: () => void): unknown;
  off(event: "cancelled", listener: () => void): unknown;
}

/** What the source of an open-ended stream works with. */
export interface StreamOut<Ev, End extends string> {
  /** Queues an event (weight: what it counts for in `queued`, e.g. its entries); written in order. */
  send(ev: Ev, weight?: number): void;
  /** Runs `then` once every queued event is written and the transport takes more (at once when it does). */
  whenWritten(then: () => void): void;
  /** The weight of the events queued, not yet written. */
  readonly queued: number;
  end(how: End): void;
  fail(error: unknown): void;
  readonly done: boolean;
}

/**
 * Serves one open-ended stream. `start` begins the source and returns how to stop it (or a promise
 * of that: a stop that arrives first is applied as soon as it is known). Resolves with how it ended
 * ("cancelled": the client went away), rejects with the error it failed with.
 */
export function openEndedStream<Ev, End extends string>(
  sink: EventSink<Ev>,
  admit: () => void,
  start: (out: StreamOut<Ev, End>) => (() => void) | Promise<() => void> | void,
): Promise<End | "cancelled"> {
  return new Promise((resolve, reject) => {
    const queue: { ev: Ev; weight: number }[] = [];
    let queued = 0;
    let blocked = false;
    let done = false;
    let stop: (() => void) | undefined;
    const written: (() => void)[] = [];
    const finish = (end: End | "cancelled" | { error: unknown }) => {
      if (done) return;
      done = true;
      stop?.();
      sink.off("cancelled", onCancelled);
      if (typeof end === "string") resolve(end);
      else reject(end.error);
    };
    const onCancelled = () => finish("cancelled");
    const pump = () => {
      while (!done && !blocked && queue.length > 0) {
        try {
          admit();
        } catch (error) {
          finish({ error });
          return;
        }
        const { ev, weight } = queue.shift()!;
        queued -= weight;
        if (!sink.write(ev)) {
          blocked = true;
          sink.once("drain", () => {
            blocked = false;
            pump();
          });
        }
      }
      if (!done && !blocked && queue.length === 0) for (const then of written.splice(0)) then();
    };
    const out: StreamOut<Ev, End> = {
      send(ev, weight = 1) {
        if (done) return;
        queue.push({ ev, weight });
        queued += weight;
        pump();
      },
      whenWritten(then) {
        if (done) return;
        written.push(then);
        pump();
      },
      get queued() {
        return queued;
      },
      end: (how) => finish(how),
      fail: (error) => finish({ error }),
      get done() {
        return done;
      },
    };
    if (sink.cancelled) return resolve("cancelled");
    sink.on("cancelled", onCancelled);
    let started: ReturnType<typeof start>;
    try {
      started = start(out);
    } catch (error) {
      finish({ error });
      return;
    }
    if (typeof started === "function") {
      if (done) started();
      else stop = started;
    } else if (started) {
      started.then((s) => {
        if (done) s();
        else stop = s;
      }, (error: unknown) => finish({ error }));
    }
  });
}
