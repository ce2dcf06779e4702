import type { ProjectionStartReport } from "../projection/index.js";
import type { EngineRuntime } from "./runtime.js";

/**
 * One engine module as the runtime drives it. Start runs in list order; shutdown runs the list
 * backwards twice: first `release` (what must finish while this node still holds its cluster
 * units: the CMD buffer's last flush writes under the user slots' fences, then the cluster hands
 * the units over, each once its work in flight stopped), then `stop` (the local workers).
 */
export interface RuntimeModule {
  /** The module's name, also its core/ folder when it has one (`folder`). */
  readonly name: string;
  /** The core/ folder the module's code lives in (test/core/runtime checks every folder with a lifecycle is here). */
  readonly folder: string;
  start?(): Promise<void> | void;
  release?(): Promise<void> | void;
  stop?(): Promise<void> | void;
  /**
   * The prefixes of the module's metric names (registered in the process registry by its folder's
   * metrics.ts); a name belongs to the module with its longest matching prefix (health()).
   */
  readonly metrics: readonly string[];
}

/** What the list's entries need beyond the runtime's public parts. */
export interface ModuleContext {
  /** The relay's background sweep every N ms; 0: none (the owner drains it). */
  relayIntervalMs: number;
  /** The retention task's round every N ms; 0: none (issue 26). */
  retentionIntervalMs: number;
  /** The runtime built the authority: stopping the projection closes it. */
  ownsAuthority: boolean;
  /** Where the projection's start-up report goes (EngineRuntime.start returns it). */
  onProjectionStart(report: ProjectionStartReport): void;
}

/**
 * THE list of engine modules, in start order (docs/architecture.md, "Start and stop order").
 * A new engine module with a lifecycle adds one entry here (docs/architecture.md, "Adding an engine
 * module", lists the other files it touches).
 */
export function engineModules(rt: EngineRuntime, ctx: ModuleContext): RuntimeModule[] {
  const cluster = rt.cluster;
  const stopProjection = () => (ctx.ownsAuthority ? rt.projection.close() : rt.projection.stop());
  return [
    // the node takes its units first, so that the projection's start-up recovers and catches up its own partitions
    ...(cluster ? [{ name: "cluster", folder: "cluster", start: () => cluster.start(), release: () => cluster.stop(), metrics: ["qim_cluster_"] }] : []),
    {
      name: "projection", folder: "projection",
      // its start-up audit throws ProjectionRefusedError when the log is not ours or lost acknowledged records: nothing after it starts
      start: async () => {
        try {
          ctx.onProjectionStart(await rt.projection.start());
        } catch (err) {
          // what its start opened (an authority the runtime made included) is closed here: a failed module is not in the shutdown
          await stopProjection();
          throw err;
        }
      },
      stop: stopProjection,
      metrics: ["qim_session_projection_", "qim_session_conversation_state_", "qim_session_group_interval_"],
    },
    { name: "conversation-list", folder: "conversation-list", start: () => rt.conversationList.start(), stop: () => rt.conversationList.stop(), metrics: ["qim_conversation_list_"] },
    { name: "unread-audit", folder: "conversation-list", start: () => rt.unreadAudit.start(), stop: () => rt.unreadAudit.stop(), metrics: ["qim_conversation_list_unread_audit_"] },
    { name: "session-view", folder: "session-view", start: () => rt.sessionView.start(), stop: () => rt.sessionView.stop(), metrics: ["qim_session_snapshot_", "qim_session_delta_"] },
    // the pending buffer's last flush (and its file) needs the slots' fences: it stops in the release pass, before the cluster hands them over;
    // its metrics include the CMD log's (qim_cmd_log_*): the module runs the log (runtime.cmd.log)
    { name: "cmd-sync", folder: "cmd-sync", start: () => rt.cmd.start(), release: () => rt.cmd.stop(), metrics: ["qim_cmd_"] },
    // pushes to online devices: reads the partitions this node owns, like the projection
    // RTC's ring timers (core/rtc pushes through delivery) end with it; the users' call marks expire by themselves
    { name: "delivery", folder: "delivery", start: () => rt.delivery.start(), stop: () => { rt.rtc.stop(); return rt.delivery.stop(); }, metrics: ["qim_delivery_"] },
    // rooms (spec 003 §1): the counts to the writers every second; the rings are memory and go with the process
    { name: "rooms", folder: "rooms", start: () => rt.rooms.start(), stop: () => rt.rooms.stop(), metrics: ["qim_rooms_"] },
    // presence subscriptions (spec 003 §2.1): the live-node watch and the recheck; the watches are memory and go with the process
    { name: "presence", folder: "presence", start: () => rt.presence.start(), stop: () => rt.presence.stop(), metrics: ["qim_presence_"] },
    // its trims are fenced by the relay buckets' leases: it stops in the release pass, before the cluster hands them over
    {
      name: "retention", folder: "retention",
      start: () => { if (ctx.retentionIntervalMs > 0) rt.retention.start(ctx.retentionIntervalMs); },
      release: () => rt.retention.stop(),
      metrics: ["qim_retention_"],
    },
    // last to start (as before the list): it appends to the dispatch log once every module reading it runs; stopped after the
    // cluster's handover, which waits for the work in flight of each relay bucket
    {
      name: "relay", folder: "dispatch",
      start: () => { if (ctx.relayIntervalMs > 0) rt.relay.start(ctx.relayIntervalMs); },
      stop: () => rt.relay.stop(),
      metrics: ["qim_relay_"],
    },
  ];
}
