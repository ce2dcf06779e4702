import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../base.js";
import { DashboardFeed, retryable, type FeedListener } from "../dashboard/feed.js";
import { dashboardLine, intervalMs as parseInterval, plainLine, TrendHistory, type ConnectionState } from "../dashboard/model.js";
import { classifyError, InterruptedError } from "../exit-codes.js";
import { visibleLines } from "../format.js";

export default class Dashboard extends ConnectedCommand<typeof Dashboard> {
  static override summary = "Watch the engine live: membership rates, projection epoch and lag per partition, registration queues, the audit log.";
  static override description = `Streams a snapshot from the admin API every --interval (ObserveService.Watch) and shows, on a terminal, a full-screen view: membership events/s and retries/s (from the server's raw counters, between two snapshots), sparklines of the last 5 minutes of membership events, messages and dispatched records per second and of each partition's lag, the projection epoch, per dispatch-log partition the checkpoint against the low and high watermarks with the lag and a bar (the share of the retained window read), the registration queue depth per Redis instance (the backlog now), users rebuilt, authority writes and failures, registrations queued in total since the server started ("queued total", not a backlog), and the newest audit-log entries. Keys: q quits, p pauses and resumes (the screen keeps the last snapshot), Ctrl+C interrupts.

When stdout is not a terminal (or with --output json) it prints one line per snapshot instead: plain "key=value" text, or one JSON object per line. --count stops after that many snapshots.

A server that goes away (or whose Redis is unreachable) is retried with a backoff from 0.5 s to 5 s: the screen says "disconnected, retrying" with the last error, the line mode prints one line per failed attempt on stderr, and both carry on when it is back.

Any role (viewer, operator, admin, drill). Exit codes: 0 q or --count reached; 130 Ctrl+C; 2 bad --interval; 6 refused certificate or role. Unreachable servers are retried, not exit 5.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    "<%= config.bin %> <%= command.id %> --interval 5s",
    "<%= config.bin %> <%= command.id %> --count 1 --json | jq '.projection.partitions[] | select(.lag > 0)'",
  ];
  static override flags = {
    interval: Flags.string({ char: "i", default: "1s", description: "time between snapshots, 200ms to 60s (e.g. 500ms, 1s, 2.5s, 1m; a bare number is seconds)" }),
    count: Flags.integer({ char: "n", min: 1, description: "stop after this many snapshots (default: until q or Ctrl+C)" }),
  };

  async run(): Promise<void> {
    const intervalMs = parseInterval("--interval", this.flags.interval);
    const { count } = this.flags;
    const { client, endpoint } = await this.connect();
    const insecure = this.failureContext.insecure === true;
    const feedOptions = {
      open: (ms: number, onSnapshot: Parameters<typeof client.watch>[1]) => client.watch({ intervalMs: ms }, onSnapshot),
      intervalMs,
      describe: (err: unknown) => classifyError(err, this.failureContext).message,
      // an ambiguous UNAVAILABLE is probed once before a retry: a refused certificate is fatal and
      // exits 6 through catch(), which reuses the verdict; its describe() message uses it too
      retryable: async (err: unknown) => {
        const certificateRefused = await this.probeCertificateRefusal(err);
        if (certificateRefused === undefined) delete this.failureContext.certificateRefused;
        else this.failureContext.certificateRefused = certificateRefused;
        return retryable(err, { insecure, certificateRefused: certificateRefused === true });
      },
    };

    // ink only on a terminal (and lazily: other commands and line mode never load it)
    if (!this.jsonEnabled() && process.stdout.isTTY === true) {
      // ink reads CI / CONTINUOUS_INTEGRATION once, when it loads, and under either it draws
      // nothing until exit (a log-friendly mode for CI consoles). Here stdout is a real terminal
      // and the operator asked for a live screen, so that mode would only hide it: turn it off
      // for this process before ink loads. Line mode (not a terminal) never loads ink.
      for (const k of ["CI", "CONTINUOUS_INTEGRATION"]) if (k in process.env) process.env[k] = "false";
      const { renderDashboard } = await import("../dashboard/app.js");
      await new Promise<void>((resolve, reject) => {
        let seen = 0;
        const finish = (err?: unknown) => {
          feed.stop();
          ui.unmount();
          if (err) reject(err);
          else resolve();
        };
        const history = new TrendHistory(intervalMs);
        const ui = renderDashboard({
          endpoint, intervalMs, snapshot: null, rates: null, trends: null, state: { kind: "connecting" },
          onQuit: (how) => finish(how === "interrupt" ? new InterruptedError() : undefined),
        });
        const feed = new DashboardFeed(feedOptions, {
          snapshot: ({ snapshot, rates }) => {
            ui.update({ snapshot, rates, trends: history.record(snapshot, rates) });
            if (count !== undefined && ++seen >= count) finish();
          },
          state: (state) => ui.update({ state }),
          fatal: finish,
        });
        feed.start();
      });
      return;
    }

    const json = this.jsonEnabled();
    await new Promise<void>((resolve, reject) => {
      let seen = 0;
      let down = false;
      const finish = (err?: unknown) => {
        feed.stop();
        process.stdout.off("error", onStdoutError);
        if (err) reject(err);
        else resolve();
      };
      // a reader that went away (`| head -n 3`) ends the watch quietly
      const onStdoutError = (err: NodeJS.ErrnoException) => finish(err.code === "EPIPE" ? undefined : err);
      process.stdout.on("error", onStdoutError);
      const listener: FeedListener = {
        snapshot: ({ snapshot, rates }) => {
          process.stdout.write(`${json ? JSON.stringify(dashboardLine(snapshot, rates)) : visibleLines(plainLine(snapshot, rates))}\n`);
          if (count !== undefined && ++seen >= count) finish();
        },
        state: (state: ConnectionState) => {
          if (state.kind === "disconnected") {
            down = true;
            process.stderr.write(`disconnected from ${endpoint}, retrying in ${(state.retryInMs / 1000).toFixed(1)} s (attempt ${state.attempt}): ${state.error}\n`);
          } else if (state.kind === "connected" && down) {
            down = false;
            process.stderr.write(`reconnected to ${endpoint}\n`);
          }
        },
        fatal: finish,
      };
      const feed = new DashboardFeed(feedOptions, listener);
      feed.start();
    });
  }
}
