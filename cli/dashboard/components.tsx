/**
 * The dashboard's ink components: props only, no data fetching, no timers (STYLE "The TUI"). The
 * data comes from cli/dashboard/feed.ts through the command; tests render these from fixed props
 * at a fixed width (test/dashboard/components.test.tsx).
 */
import { Box, Text } from "ink";
import type { ProjectionStatusResult } from "../projection/results.js";
import { formatRate, type AuditLineResult, type ConnectionState, type CountersResult, type DashboardSnapshot, type Rates as RateValues } from "./model.js";

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
        users rebuilt {counters.usersRebuilt}   authority written {counters.conversationStateWritten}   failures <Text color={counters.conversationStateFailures > 0 ? "red" : undefined}>{counters.conversationStateFailures}</Text>   queued {counters.conversationStatePending}
      </Text>
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
 * share of the window read so far ((checkpoint − low) / (high − low); full when caught up).
 */
export function Partitions({ partitions, width }: { partitions: ProjectionStatusResult["partitions"]; width: number }) {
  const barWidth = Math.max(8, Math.min(40, width - FIXED - 2));
  return (
    <Box flexDirection="column">
      <Text bold wrap="truncate">{COLUMNS.map(([h, w], i) => (i < 2 ? h.padEnd(w) : `${h.padStart(w - 1)} `)).join("")} WINDOW READ</Text>
      {partitions.map((p) => (
        <Text key={p.partition} wrap="truncate">
          {cell(p.partition, 5, false)}
          <Text color={p.verdict === "OK" ? "green" : "red"}>{cell(p.verdict, 18, false)}</Text>
          {cell(p.checkpoint, 12)}{cell(p.low, 12)}{cell(p.high, 12)}
          <Text color={(p.lag ?? 0) > 0 ? "yellow" : undefined}>{cell(p.lag, 10)}</Text>{" "}
          <Bar value={p.checkpoint === null ? 0 : p.checkpoint - p.low} max={p.checkpoint === null ? 1 : p.high - p.low} width={barWidth} />
        </Text>
      ))}
    </Box>
  );
}

/** Registration queue depth per Redis instance (written to the authority in batches). */
export function Queues({ pending }: { pending: ProjectionStatusResult["pending"] }) {
  return (
    <Text wrap="truncate">
      <Text bold>registration queue</Text>  {pending.length === 0 ? "-" : pending.map((q) => `instance ${q.instance}: ${q.depth}${q.deadLetters > 0 ? ` (${q.deadLetters} dead letters)` : ""}`).join("   ")}
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
          {e.time.replace(/^\d{4}-\d\d-\d\dT/, "").replace(/\.\d+Z$/, "Z")}  {(e.principal || "-").padEnd(14)} {e.rpc.replace(/^\/qim\.admin\.v1\./, "").padEnd(38)} <Text color={e.result === "OK" ? "green" : "red"}>{e.result}</Text>
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
  state: ConnectionState;
  paused: boolean;
  /** Columns available. */
  width: number;
  /** Rows available: the audit tail keeps only its newest entries that fit (a frame as tall as the terminal flickers). */
  height?: number;
}

/** Rows of everything but the audit entries (header, gaps, sections, status line; a wrapped error counted as two). */
function fixedRows(s: DashboardSnapshot, state: ConnectionState): number {
  return 14 + s.projection.partitions.length + (s.projection.failure ? 1 : 0) + (state.kind === "disconnected" ? 2 : 0);
}

export function Dashboard({ endpoint, intervalMs, snapshot, rates, state, paused, width, height }: DashboardProps) {
  // ink redraws in place only while the frame is shorter than the terminal
  const auditRows = snapshot === null || height === undefined ? Infinity : Math.max(0, height - 1 - fixedRows(snapshot, state));
  return (
    <Box flexDirection="column" width={width}>
      <Header endpoint={endpoint} state={state} intervalMs={intervalMs} time={snapshot ? snapshot.time.replace(/\.\d+Z$/, "Z") : null} />
      {snapshot === null ? (
        <Text dimColor>waiting for the first snapshot…</Text>
      ) : (
        <Box flexDirection="column" gap={1} marginTop={1}>
          <Overview projection={snapshot.projection} />
          <Rates rates={rates} counters={snapshot.counters} />
          <Partitions partitions={snapshot.projection.partitions} width={width} />
          <Queues pending={snapshot.projection.pending} />
          {auditRows > 0 ? <AuditTail entries={snapshot.audit.slice(-auditRows)} width={width} /> : null}
        </Box>
      )}
      <Box marginTop={1}>
        <StatusLine state={state} paused={paused} />
      </Box>
    </Box>
  );
}
