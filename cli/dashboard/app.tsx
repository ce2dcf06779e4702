/**
 * The interactive shell around <Dashboard>: keys (q quits, p pauses, Ctrl+C interrupts), the
 * terminal's width, and what pausing freezes. The data arrives as props (the command re-renders
 * on each feed event); nothing here fetches.
 */
import { render, useInput, useStdin, useStdout } from "ink";
import { useEffect, useState } from "react";
import { Dashboard } from "./components.js";
import type { ConnectionState, DashboardSnapshot, Rates, Trends } from "./model.js";

/** How the user left: q (exit 0) or Ctrl+C (exit 130, as every command). */
export type Quit = "quit" | "interrupt";

export interface DashboardAppProps {
  endpoint: string;
  intervalMs: number;
  snapshot: DashboardSnapshot | null;
  rates: Rates | null;
  /** The sparklines' series as of `snapshot` (cli/dashboard/model.ts TrendHistory). */
  trends?: Trends | null;
  state: ConnectionState;
  onQuit(how: Quit): void;
}

function useTerminalSize(): { columns: number; rows: number | undefined } {
  const { stdout } = useStdout();
  const read = () => ({ columns: stdout.columns || 100, rows: stdout.rows || undefined });
  const [size, setSize] = useState(read);
  useEffect(() => {
    const onResize = () => setSize(read());
    stdout.on("resize", onResize);
    return () => {
      stdout.off("resize", onResize);
    };
  }, [stdout]);
  return size;
}

export function DashboardApp({ endpoint, intervalMs, snapshot, rates, trends = null, state, onQuit }: DashboardAppProps) {
  const { isRawModeSupported } = useStdin();
  // paused: the snapshot, rates and trends on screen when p was pressed stay there; the feed keeps running underneath
  const [frozen, setFrozen] = useState<{ snapshot: DashboardSnapshot | null; rates: Rates | null; trends: Trends | null } | null>(null);
  useInput((input, key) => {
    if (input === "q") onQuit("quit");
    else if (key.ctrl && input === "c") onQuit("interrupt");
    else if (input === "p") setFrozen((f) => (f ? null : { snapshot, rates, trends }));
  }, { isActive: isRawModeSupported === true });
  const { columns, rows } = useTerminalSize();
  const shown = frozen ?? { snapshot, rates, trends };
  return <Dashboard endpoint={endpoint} intervalMs={intervalMs} {...shown} state={state} paused={frozen !== null} width={columns} height={rows} />;
}

/** The TUI on the process's terminal; `update` re-renders with new data, `unmount` restores the terminal. */
export function renderDashboard(props: DashboardAppProps): { update(p: Partial<DashboardAppProps>): void; unmount(): void } {
  let current = props;
  const instance = render(<DashboardApp {...current} />, { exitOnCtrlC: false });
  return {
    update(p) {
      current = { ...current, ...p };
      instance.rerender(<DashboardApp {...current} />);
    },
    unmount() {
      instance.unmount();
    },
  };
}
