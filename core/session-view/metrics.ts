import { Counter, Histogram } from "prom-client";
import { registry } from "../metrics/index.js";

/** The session view's metrics, in the process's one registry (core/metrics/). */
export const metrics = {
  refreshed: new Counter({ name: "qim_session_snapshot_refreshed_total", help: "Held user snapshots that read the rows again because the user's stored version moved (a write of another node, or of this one)", registers: [registry] }),
  loaded: new Counter({ name: "qim_session_snapshot_loaded_total", help: "User snapshots loaded from the conversation-list engine (a cold user, or one whose snapshot expired or was evicted)", registers: [registry] }),
  loadedRows: new Histogram({ name: "qim_session_snapshot_rows", help: "Rows of each loaded user snapshot", buckets: [10, 50, 200, 1000, 5000], registers: [registry] }),
  evicted: new Counter({ name: "qim_session_snapshot_evicted_total", help: "User snapshots dropped: expired (snapshot_ttl), over the global row bound (least recently used first), or cleared", registers: [registry] }),
  revisionInvalidated: new Counter({ name: "qim_session_snapshot_revision_invalidated_total", help: "Structural changes (pin, unpin, archive, leave, delete) that gave a held snapshot a new revision (spec 002 §6.3)", registers: [registry] }),
  staleCursor: new Counter({ name: "qim_session_snapshot_stale_cursor_total", help: "Pages asked with a cursor of another revision, answered with the new revision's first page and projection_complete=false", registers: [registry] }),
  deltaFrames: new Counter({ name: "qim_session_delta_frames_total", help: "SESSION_DELTA and badge frames sent to watchers after the merge window", labelNames: ["kind"] as const, registers: [registry] }),
  deltaMerged: new Counter({ name: "qim_session_delta_merged_total", help: "Frames overwritten inside the merge window by a newer frame of the same (user, conversation) or badge", registers: [registry] }),
};
