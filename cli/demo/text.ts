/** Table-mode text of `qimctl demo`'s summary. */
import { table } from "../format.js";
import type { DemoStep } from "./results.js";

/** One short phrase per step for the summary table. */
function summaryOf(s: DemoStep): string {
  const d = s.details as Record<string, any>;
  switch (s.name) {
    case "dev-up":
      return `${d.status} at ${d.endpoint}`;
    case "create-group":
      return "team (3 members) and side (2 members)";
    case "send-messages":
      return "team seq 1–3, side seq 1";
    case "add-member":
      return `dave joined: event seq ${d.change?.eventConversationSeq}`;
    case "remove-member":
      return `carol removed: event seq ${d.change?.eventConversationSeq}`;
    case "history-boundaries":
      return `dave from seq ${d.dave?.earliestAvailableConversationSeq}, carol up to seq ${d.carol?.seqs?.at(-1)}`;
    case "conversation-summaries":
      return `alice ${d.alice?.total} conversations, carol's team REMOVED`;
    case "bump-epoch":
      return `epoch ${d.before} → ${d.bump?.epoch}, alice rebuilt`;
    case "rebuild-drill":
      return `${d.report?.users} users, ${d.report?.conversationsBefore} conversations, no difference`;
    case "dispatch-audit":
      return `${d.audit?.partitions?.length} partitions OK`;
    case "user-sessions":
      return `side pinned first, badge total unread ${d.badge?.totalUnread}`;
    case "cluster-nodes":
      return `${d.nodes?.nodes?.length ?? "?"} node(s) answered`;
    case "cmd-sync":
      return `bob's sync: ${d.bobSync?.messages?.length} commands, none after his ack`;
    case "devices":
      return `3 devices: seq ${d.seq} delivered to alice's 2, read sync to the laptop, no echo`;
    case "message-types":
      return `poll seq ${d.pollSeq} with its preview, seq ${d.recalledSeq} recalled (event ${d.recallEventSeq}), seq 2 edited (event ${d.editEventSeq})`;
    case "reactions":
      return `team seq 1: ${d.counts} (version ${d.summaryVersion}); ${d.bobFrames} REACTION_UPDATE frames on bob's phone, his badge unchanged`;
    case "call":
      return `alice's call rang bob's phone, answered and ended; call record seq ${d.recordSeq}`;
    case "bulk-add":
      return `${d.users} users from a file in ${d.summary?.of} batches: event seq ${d.summary?.events?.map((e: { eventConversationSeq: number }) => e.eventConversationSeq).join(", ")}; the re-run changed ${d.rerun?.changed}`;
    case "dev-down":
      return "stack stopped";
    default:
      return "";
  }
}

/** The summary table: one row per step, OK / FAILED / skipped and what it did or why it failed. */
export function stepsTable(steps: readonly DemoStep[]): string {
  return table(["STEP", "RESULT", "WHAT"], steps.map((s) => [s.name, s.status === "ok" ? "OK" : s.status === "failed" ? "FAILED" : "skipped", s.error ?? summaryOf(s)]));
}
