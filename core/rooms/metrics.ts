import { Counter, Gauge } from "prom-client";
import { registry } from "../metrics/index.js";

/** The rooms' metrics (issue 28, spec 003 §1), in the process's one registry. */
export const roomMetrics = {
  writes: new Counter({
    name: "qim_rooms_writes_total",
    help: "Room messages this node's writers took (ok), answered as a retry of one still in the window (duplicate: its first room_seq, nothing sent again), or refused by room_msg_rate (rate_limited)",
    labelNames: ["result"] as const,
    registers: [registry],
  }),
  broadcasts: new Counter({
    name: "qim_rooms_broadcasts_total",
    help: "Merged batches this node's writers sent, one per node with connections in the batch's rooms per turn",
    registers: [registry],
  }),
  broadcastsFailed: new Counter({
    name: "qim_rooms_broadcasts_failed_total",
    help: "Merged batches to another node that failed (its connections see a gap and replay it)",
    registers: [registry],
  }),
  frames: new Counter({
    name: "qim_rooms_frames_total",
    help: "ROOM_BATCH frames pushed to this node's connections (at most room_outbound_frame_rate per connection per second)",
    registers: [registry],
  }),
  merged: new Counter({
    name: "qim_rooms_merged_windows_total",
    help: "Writer batches merged into another one of the same room within a frame interval (room_outbound_frame_rate)",
    registers: [registry],
  }),
  windowsDropped: new Counter({
    name: "qim_rooms_windows_dropped_total",
    help: "Room windows that reached this node after its last connection in the room left",
    registers: [registry],
  }),
  replays: new Counter({
    name: "qim_rooms_replays_total",
    help: "ROOM_JOINs with a cursor and ROOM_REPLAYs answered by this node's writers: replayed, or truncated (outside the window or another epoch: jump to latest)",
    labelNames: ["result"] as const,
    registers: [registry],
  }),
  joins: new Counter({
    name: "qim_rooms_joins_total",
    help: "ROOM_JOINs on this node's connections by result (joined, already, full: max_rooms_per_connection)",
    labelNames: ["result"] as const,
    registers: [registry],
  }),
  writerRooms: new Gauge({ name: "qim_rooms_writer_rooms", help: "Rooms this node writes (open: with connections or messages to replay)", registers: [registry] }),
  localRooms: new Gauge({ name: "qim_rooms_local_rooms", help: "Rooms with connections on this node", registers: [registry] }),
};
