/** The JSON result of `qimctl demo`: the summary (the narration is table mode only). */
import type { DEMO_STEPS, Person } from "./scenario.js";

export type StepName = "dev-up" | (typeof DEMO_STEPS)[number] | "dev-down";

export interface DemoStep {
  name: StepName;
  /** True when the step did what it should (checked). */
  ok: boolean;
  status: "ok" | "failed" | "skipped";
  /**
   * What the step did and saw (ids, sequences, counts; the API's results in the shapes of the
   * commands: `change` as `membership add`, `report` as `drill rebuild`, …); empty when skipped.
   */
  details: Record<string, unknown>;
  /** Why it failed: the check that did not hold, or the error. */
  error: string | null;
}

export interface DemoResult {
  /** True when every step did what it should. */
  ok: boolean;
  /** The first step that failed, or null. */
  failedStep: string | null;
  endpoint: string | null;
  dataDir: string;
  authority: string | null;
  tenant: string | null;
  /** The demo's user ids by name, and its two groups. */
  users: Record<Person, string> | null;
  groups: { team: string; side: string } | null;
  steps: DemoStep[];
  /** Whether the dev stack is still running (false with --down). */
  stackRunning: boolean;
}
