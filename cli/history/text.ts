/** Table-mode text of `history`. */
import { keyValues, table } from "../format.js";
import type { HistoryResult, RecordResult } from "./results.js";

/** What a history record shows in a table: text, or the membership or group event, or the payload size. */
export function recordText(r: RecordResult): string {
  if (r.membership) return `${r.membership.op} ${r.membership.users.join(", ")}`;
  if (r.groupEvent) return r.groupEvent.op === "dissolve" ? "group dissolved" : r.groupEvent.op;
  if (r.text !== null) return r.text.replace(/\s+/g, " ").slice(0, 120);
  return `<${Buffer.from(r.payloadBase64, "base64").length} bytes ${r.contentType}>`;
}

export function historyText(h: HistoryResult): string {
  return [
    keyValues([
      ["user", `${h.user} (${h.state})`],
      ["interval", `(${h.joinedAt}, ${h.leftAt ?? "-"})`],
      ["earliest available seq", h.earliestAvailableConversationSeq],
    ]),
    "",
    table(["SEQ", "KIND", "SENDER", "TEXT"], h.records.map((r) => [r.conversationSeq, r.kind, r.senderId, recordText(r)])),
  ].join("\n");
}
