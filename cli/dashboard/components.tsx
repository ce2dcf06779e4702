/**
 * The dashboard's ink components: props only, no data fetching, no timers (STYLE "The TUI"). The
 * data comes from cli/dashboard/feed.ts through the command; tests render these from fixed props
 * at a fixed width (test/dashboard/components.test.tsx).
 */
import { Box, Text } from "ink";
import type { NodeResult } from "../cluster/results.js";
import type { CmdBadFileResult } from "../cmd/results.js";
import { badFileWarning } from "../cmd/text.js";
import { visible } from "../format.js";
import type { ProjectionStatusResult } from "../projection/results.js";
import { formatRate, type AuditLineResult, type ConnectionState, type CountersResult, type DashboardSnapshot, type DevicesResult, type Rates as RateValues, type Trends as TrendValues } from "./model.js";

/** `filled` of `width` cells: value/max of it, rounded; a max of 0 is full (nothing to do). */
export function barCells(value: number, max: number, width: number): number {
  if (width <= 0) return 0;
  if (max <= 0) return width;
  return Math.round(Math.min(1, Math.max(0, value / max)) * width);
}

export function Bar({ value, max, width }: { value: number; max: number; width: number }) {
  const filled = barCells(value, max, width);
  return (
    <Text>
      <Text color="green">{"█".repeat(filled)}</Text>
      <Text dimColor>{"░".repeat(Math.max(0, width - filled))}</Text>
    </Text>
  );
}

/** The eight heights of a sparkline cell, lowest first. */
export const SPARK_LEVELS = "▁▂▃▄▅▆▇█";

/**
 * `values` (oldest first) as at most `cells` characters, the newest at the right and spaces on the
 * left when there are fewer: with more values than cells, each cell is the largest of a run of
 * ceil(n / cells) consecutive values, the runs counted from the newest (so peaks stay visible and
 * the oldest run may be shorter). A cell without any value is a space. Heights are linear from 0
 * (▁) to `top` (█; default the largest value shown): level round(v / top × 7), at least ▂ for any
 * value above 0, so that a little activity never reads as none.
 */
export function sparkline(values: readonly (number | null)[], cells: number, top?: number): string {
  if (cells <= 0) return "";
  const run = Math.max(1, Math.ceil(values.length / cells));
  const shown: (number | null)[] = [];
  for (let end = values.length; end > 0; end -= run) {
    const part = values.slice(Math.max(0, end - run), end).filter((v): v is number => v !== null);
    shown.unshift(part.length === 0 ? null : Math.max(...part));
  }
  const max = top ?? Math.max(0, ...shown.filter((v): v is number => v !== null));
  const text = shown.map((v) => {
    if (v === null) return " ";
    if (v <= 0 || max <= 0) return SPARK_LEVELS[0];
    return SPARK_LEVELS[Math.max(1, Math.min(7, Math.round((v / max) * 7)))];
  }).join("");
  return text.padStart(cells);
}

/** The largest value of series (0 when there is none): a shared scale for sparklines that should compare. */
export function seriesMax(series: readonly (readonly (number | null)[])[]): number {
  let max = 0;
  for (const values of series) for (const v of values) if (v !== null && v > max) max = v;
  return max;
}

/** "45s", "4m 59s", "2h 5m": how much time a history covers. */
export function formatSpan(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60 ? ` ${s % 60}s` : ""}`;
  return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60) ? ` ${Math.floor((s % 3600) / 60)}m` : ""}`;
}

function stateText(state: ConnectionState): { text: string; color: "green" | "yellow" | "red" } {
  switch (state.kind) {
    case "connecting":
      return { text: "connecting", color: "yellow" };
    case "connected":
      return { text: "connected", color: "green" };
    case "disconnected":
      return { text: "disconnected, retrying", color: "red" };
  }
}

export function Header({ endpoint, state, intervalMs, time }: { endpoint: string; state: ConnectionState; intervalMs: number; time: string | null }) {
  const s = stateText(state);
  return (
    <Box justifyContent="space-between">
      <Text wrap="truncate">
        <Text bold>qimctl dashboard</Text>  {endpoint}  <Text color={s.color}>● {s.text}</Text>  every {intervalMs / 1000}s
      </Text>
      <Text dimColor>{time ?? ""}</Text>
    </Box>
  );
}

export function Overview({ projection }: { projection: ProjectionStatusResult }) {
  return (
    <Box flexDirection="column">
      <Text wrap="truncate">
        <Text bold>epoch {projection.epoch}</Text>  authority {projection.authority}
      </Text>
      {projection.failure ? <Text color="red" wrap="truncate">PROJECTION FAILURE: {projection.failure}</Text> : null}
    </Box>
  );
}

/** Per-second rates (from the last two snapshots) and the counters' totals. */
export function Rates({ rates, counters }: { rates: RateValues | null; counters: CountersResult }) {
  return (
    <Box flexDirection="column">
      <Text wrap="truncate">
        membership events/s <Text bold>{formatRate(rates?.membershipEventsPerSec)}</Text>   retries/s <Text bold>{formatRate(rates?.membershipRetriesPerSec)}</Text>   messages/s {formatRate(rates?.messagesCommittedPerSec)}   dispatched/s {formatRate(rates?.relayDispatchedPerSec)}
      </Text>
      <Text wrap="truncate">
        users rebuilt {counters.usersRebuilt}   authority written {counters.conversationStateWritten}   failures <Text color={counters.conversationStateFailures > 0 ? "red" : undefined}>{counters.conversationStateFailures}</Text>   queued total {counters.conversationStateQueuedTotal}
      </Text>
    </Box>
  );
}

/** The devices of the server: connections, frames and pushes per second, commit-to-push p99, slow devices, refused tokens. */
export function DevicesPanel({ devices, rates }: { devices: DevicesResult; rates: RateValues | null }) {
  const p99 = rates?.commitToPushP99Ms;
  return (
    <Box flexDirection="column">
      <Text wrap="truncate">
        devices <Text bold>{devices.connections}</Text> connections ({devices.onlineUsers} users)   frames in/s {formatRate(rates?.framesInPerSec)}  out/s {formatRate(rates?.framesOutPerSec)}   pushes/s <Text bold>{formatRate(rates?.pushesPerSec)}</Text>
      </Text>
      <Text wrap="truncate">
        commit→push p99 {p99 === null || p99 === undefined ? "-" : `≤${p99} ms`}   delivery lag <Text color={devices.deliveryLag > 0 ? "yellow" : undefined}>{devices.deliveryLag}</Text>   slow devices: resync <Text color={devices.backPressureSoft > 0 ? "yellow" : undefined}>{devices.backPressureSoft}</Text>  closed <Text color={devices.backPressureHard > 0 ? "red" : undefined}>{devices.backPressureHard}</Text>   tokens refused {devices.upgradesRefused}
      </Text>
    </Box>
  );
}

/** Whether the server has had devices at all (a node without a gateway shows no devices panel). */
export const hasDevices = (d: DevicesResult) => d.connections > 0 || d.framesIn > 0 || d.pushes > 0 || d.upgradesRefused > 0;

const TREND_LABEL = 22;
/** "  now 12345.6  max 12345.6" */
const TREND_TAIL = 28;

/**
 * Sparklines of the rates over the history the dashboard keeps (TrendHistory): membership events,
 * messages committed and dispatched per second, each on its own scale, with the newest value and
 * the largest one shown.
 */
export function Trends({ trends, width }: { trends: TrendValues; width: number }) {
  const cells = Math.max(8, Math.min(120, width - TREND_LABEL - TREND_TAIL));
  const rows: [string, (number | null)[]][] = [
    ["membership events/s", trends.membershipEventsPerSec],
    ["messages/s", trends.messagesCommittedPerSec],
    ["dispatched/s", trends.relayDispatchedPerSec],
  ];
  return (
    <Box flexDirection="column">
      <Text bold wrap="truncate">trends  <Text dimColor>last {formatSpan(trends.spanMs)} (up to {formatSpan(trends.windowMs)})</Text></Text>
      {rows.map(([name, values]) => {
        const newest = values[values.length - 1] ?? null;
        const max = seriesMax([values]);
        return (
          <Text key={name} wrap="truncate">
            {name.padEnd(TREND_LABEL)}<Text color="cyan">{sparkline(values, cells)}</Text>  now {formatRate(newest ?? undefined)}  max {values.some((v) => v !== null) ? formatRate(max) : "-"}
          </Text>
        );
      })}
    </Box>
  );
}

const COLUMNS = [["PART", 5], ["VERDICT", 18], ["CHECKPOINT", 12], ["LOW", 12], ["HIGH", 12], ["LAG", 10]] as const;
const FIXED = COLUMNS.reduce((a, [, w]) => a + w, 0);

const cell = (v: string | number | null, w: number, right = true) => {
  const s = v === null ? "-" : String(v);
  return right ? `${s.padStart(w - 1)} ` : s.padEnd(w);
};

/**
 * Per dispatch partition: checkpoint against the retained window [low, high]; the bar is the
 * share of the window read so far ((checkpoint − low) / (high − low); full when caught up). With
 * `trends`, a last column holds each partition's lag over the history, on one scale for all of
 * them (the largest lag shown, named in the header: `LAG TREND ≤N`), so that the partitions compare.
 */
export function Partitions({ partitions, width, trends }: { partitions: ProjectionStatusResult["partitions"]; width: number; trends?: TrendValues | null }) {
  const lagOf = new Map((trends?.lag ?? []).map((l) => [l.partition, l.values]));
  const room = width - FIXED - 3;
  const barWidth = trends ? Math.max(8, Math.min(30, Math.floor(room / 2))) : Math.max(8, Math.min(40, width - FIXED - 2));
  const sparkWidth = Math.max(8, Math.min(60, room - barWidth));
  const top = seriesMax([...lagOf.values()]);
  return (
    <Box flexDirection="column">
      <Text bold wrap="truncate">
        {COLUMNS.map(([h, w], i) => (i < 2 ? h.padEnd(w) : `${h.padStart(w - 1)} `)).join("")} {trends ? `${"WINDOW READ".padEnd(barWidth)} LAG TREND ≤${top}` : "WINDOW READ"}
      </Text>
      {partitions.map((p) => (
        <Text key={p.partition} wrap="truncate">
          {cell(p.partition, 5, false)}
          <Text color={p.verdict === "OK" ? "green" : "red"}>{cell(p.verdict, 18, false)}</Text>
          {cell(p.checkpoint, 12)}{cell(p.low, 12)}{cell(p.high, 12)}
          <Text color={(p.lag ?? 0) > 0 ? "yellow" : undefined}>{cell(p.lag, 10)}</Text>{" "}
          <Bar value={p.checkpoint === null ? 0 : p.checkpoint - p.low} max={p.checkpoint === null ? 1 : p.high - p.low} width={barWidth} />
          {trends ? <Text color="yellow">{" "}{sparkline(lagOf.get(p.partition) ?? [], sparkWidth, top)}</Text> : null}
        </Text>
      ))}
    </Box>
  );
}

/** Units of each kind (core/cluster): relay buckets and user slots; a node's share bar is against these. */
const RELAY_BUCKETS = 256;

/**
 * The engine cluster's nodes: state, heartbeat age and the units each owns, with a bar of its
 * share of the relay buckets (each of N live nodes owns about 1/N of each kind).
 */
export function Nodes({ nodes, width }: { nodes: NodeResult[]; width: number }) {
  const barWidth = Math.max(8, Math.min(30, width - 70));
  return (
    <Box flexDirection="column">
      <Text bold wrap="truncate">{"NODE".padEnd(18)}{"STATE".padEnd(10)}{"HEARTBEAT".padStart(10)} {"RELAY".padStart(6)}{"PARTS".padStart(6)}{"SLOTS".padStart(6)}{"DEVICES".padStart(9)}  RELAY SHARE</Text>
      {nodes.map((n) => (
        <Text key={n.nodeId} wrap="truncate">
          {n.nodeId.slice(0, 17).padEnd(18)}
          <Text color={!n.alive ? "red" : n.draining ? "yellow" : "green"}>{(!n.alive ? "DEAD" : n.draining ? "draining" : "alive").padEnd(10)}</Text>
          {(n.heartbeatAgeMs < 10_000 ? `${(n.heartbeatAgeMs / 1000).toFixed(1)}s` : formatSpan(n.heartbeatAgeMs)).padStart(10)} {String(n.owned.relayBuckets).padStart(6)}{String(n.owned.partitions).padStart(6)}{String(n.owned.slots).padStart(6)}{(n.connections === null ? "-" : String(n.connections)).padStart(9)}{"  "}
          <Bar value={n.owned.relayBuckets} max={RELAY_BUCKETS} width={barWidth} />
        </Text>
      ))}
    </Box>
  );
}

/** CMD pending files set aside as .bad: one warning line each (the operator inspects, then deletes the file). */
export function CmdBadFiles({ files }: { files: CmdBadFileResult[] }) {
  return (
    <Box flexDirection="column">
      {files.map((b) => (
        <Text key={`${b.nodeId ?? ""}|${b.path}`} color="yellow" wrap="wrap">{badFileWarning(b)}</Text>
      ))}
    </Box>
  );
}

/** Registration queue depth per Redis instance (written to the authority in batches): the backlog now, beside the "queued total" counter. */
export function Queues({ pending }: { pending: ProjectionStatusResult["pending"] }) {
  return (
    <Text wrap="truncate">
      <Text bold>registration queue (backlog now)</Text>  {pending.length === 0 ? "-" : pending.map((q) => `instance ${q.instance}: ${q.depth}${q.deadLetters > 0 ? ` (${q.deadLetters} dead letters)` : ""}`).join("   ")}
    </Text>
  );
}

export function AuditTail({ entries, width }: { entries: AuditLineResult[]; width: number }) {
  return (
    <Box flexDirection="column" width={width}>
      <Text bold>audit log (newest last)</Text>
      {entries.length === 0 ? <Text dimColor>no entries</Text> : null}
      {entries.map((e, i) => (
        <Text key={i} wrap="truncate">
          {e.time.replace(/^\d{4}-\d\d-\d\dT/, "").replace(/\.\d+Z$/, "Z")}  {visible(e.principal || "-").padEnd(14)} {visible(e.rpc.replace(/^\/qim\.admin\.v1\./, "")).padEnd(38)} <Text color={e.result === "OK" ? "green" : "red"}>{e.result}</Text>
        </Text>
      ))}
    </Box>
  );
}

export function StatusLine({ state, paused }: { state: ConnectionState; paused: boolean }) {
  return (
    <Box flexDirection="column">
      {/* wrapped, not cut: the end of the error (ECONNREFUSED, a TLS alert) is what tells why */}
      {state.kind === "disconnected" ? (
        <Text color="red">
          disconnected, retrying in {(state.retryInMs / 1000).toFixed(1)}s (attempt {state.attempt}): {state.error}
        </Text>
      ) : null}
      <Text wrap="truncate">
        {paused ? <Text inverse bold> PAUSED </Text> : null}{paused ? "  p resume  q quit" : "p pause  q quit"}
      </Text>
    </Box>
  );
}

export interface DashboardProps {
  endpoint: string;
  intervalMs: number;
  /** The snapshot shown (null before the first one) and the rates since the one before it (cli/dashboard/feed.ts). */
  snapshot: DashboardSnapshot | null;
  rates: RateValues | null;
  /** The sparklines' series (TrendHistory in the command); none: no trends section, no lag column. */
  trends?: TrendValues | null;
  state: ConnectionState;
  paused: boolean;
  /** Columns available. */
  width: number;
  /** Rows available: the audit tail keeps only its newest entries that fit (a frame as tall as the terminal flickers). */
  height?: number;
}

/** Rows of everything but the audit entries (header, gaps, sections, status line; a wrapped error counted as two). */
function fixedRows(s: DashboardSnapshot, state: ConnectionState, trends: boolean, width: number): number {
  // the trends section: a title, three sparklines and the gap before the next section
  // the nodes panel: a header per node list and a gap, when the server is a node
  // a .bad warning wraps at word boundaries: its rows at this width (a wrapped row is counted as at
  // least 80% full, the path being one long word), and the gap before the next section
  const badRows = s.cmdBadFiles.reduce((n, b) => n + Math.ceil(badFileWarning(b).length / Math.max(1, Math.floor(width * 0.8))), 0);
  // the devices panel: two rows and the gap, on a server that has had devices
  return 14 + (hasDevices(s.devices) ? 3 : 0) + (trends ? 5 : 0) + (s.nodes.length > 0 ? s.nodes.length + 2 : 0) + (badRows > 0 ? badRows + 1 : 0) + s.projection.partitions.length + (s.projection.failure ? 1 : 0) + (state.kind === "disconnected" ? 2 : 0);
}

export function Dashboard({ endpoint, intervalMs, snapshot, rates, trends, state, paused, width, height }: DashboardProps) {
  // ink redraws in place only while the frame is shorter than the terminal
  const auditRows = snapshot === null || height === undefined ? Infinity : Math.max(0, height - 1 - fixedRows(snapshot, state, !!trends, width));
  return (
    <Box flexDirection="column" width={width}>
      <Header endpoint={endpoint} state={state} intervalMs={intervalMs} time={snapshot ? snapshot.time.replace(/\.\d+Z$/, "Z") : null} />
      {snapshot === null ? (
        <Text dimColor>waiting for the first snapshot…</Text>
      ) : (
        <Box flexDirection="column" gap={1} marginTop={1}>
          {snapshot.cmdBadFiles.length > 0 ? <CmdBadFiles files={snapshot.cmdBadFiles} /> : null}
          <Overview projection={snapshot.projection} />
          <Rates rates={rates} counters={snapshot.counters} />
          {hasDevices(snapshot.devices) ? <DevicesPanel devices={snapshot.devices} rates={rates} /> : null}
          {trends ? <Trends trends={trends} width={width} /> : null}
          <Partitions partitions={snapshot.projection.partitions} width={width} trends={trends ?? null} />
          <Queues pending={snapshot.projection.pending} />
          {snapshot.nodes.length > 0 ? <Nodes nodes={snapshot.nodes} width={width} /> : null}
          {auditRows > 0 ? <AuditTail entries={snapshot.audit.slice(-auditRows)} width={width} /> : null}
        </Box>
      )}
      <Box marginTop={1}>
        <StatusLine state={state} paused={paused} />
      </Box>
    </Box>
  );
}
