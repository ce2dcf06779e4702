import { Counter, Gauge } from "prom-client";
import { registry } from "../metrics/index.js";

/** Presence subscriptions' metrics (issue 28, spec 003 §2.1), in the process's one registry. */
export const presenceMetrics = {
  subscriptions: new Gauge({
    name: "qim_presence_subscriptions",
    help: "(group, user) presence subscriptions held by this node's connections",
    registers: [registry],
  }),
  watchedUsers: new Gauge({
    name: "qim_presence_watched_users",
    help: "Distinct users some connection on this node watches",
    registers: [registry],
  }),
  frames: new Counter({
    name: "qim_presence_frames_total",
    help: "PRESENCE_UPDATE frames pushed (at most one per connection per PRESENCE_PUSH_MERGE_WINDOW_MS)",
    registers: [registry],
  }),
  states: new Counter({
    name: "qim_presence_states_total",
    help: "User states carried by PRESENCE_UPDATE frames",
    registers: [registry],
  }),
  held: new Counter({
    name: "qim_presence_held_total",
    help: "Changes that waited for a connection's merge window to end",
    registers: [registry],
  }),
  ended: new Counter({
    name: "qim_presence_ended_total",
    help: "(group, user) subscriptions ended when a frame's memberships were checked: the subscriber or the watched user is no longer an ACTIVE member of the group",
    registers: [registry],
  }),
  checkFailures: new Counter({
    name: "qim_presence_check_failures_total",
    help: "Frames held because their memberships could not be read (Redis unreachable): nothing told, tried again after a window",
    registers: [registry],
  }),
  merged: new Counter({
    name: "qim_presence_merged_total",
    help: "Changes not pushed: the user was back in the state the connection was last told when its window ended",
    registers: [registry],
  }),
  refused: new Counter({
    name: "qim_presence_refused_total",
    help: "PRESENCE_SUBs refused, by reason (rate: PRESENCE_SUB_RATE per user and group; max_subscriptions; not_member: a named user not an ACTIVE member, left out)",
    labelNames: ["reason"] as const,
    registers: [registry],
  }),
  pokes: new Counter({
    name: "qim_presence_pokes_total",
    help: "Calls telling another node that users it watches came or went here, by outcome",
    labelNames: ["outcome"] as const,
    registers: [registry],
  }),
  reads: new Counter({
    name: "qim_presence_reads_total",
    help: "Users' online states read again, by why (poke: a change here or a node's call; nodes: the cluster's live nodes changed; recheck: the periodic safety net)",
    labelNames: ["reason"] as const,
    registers: [registry],
  }),
};
