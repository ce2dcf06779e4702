/** Table-mode text of `history`. */
import { count, keyValues, table, TABLE_CELL_MAX_CHARS } from "../format.js";
import type { HistoryResult, RecordResult } from "./results.js";

/**
 * A membership event as a table cell: `join U1, U2` when every user fits the cell's bound, else
 * `join 1,000 users: U1, U2, … (+998)` — as many whole UUIDs as fit (copyable as they are), and how
 * many more. JSON keeps the whole list.
 */
export function membershipText(op: string, users: readonly string[], max: number = TABLE_CELL_MAX_CHARS): string {
  const all = `${op} ${users.join(", ")}`;
  if (all.length <= max) return all;
  const head = `${op} ${count(users.length)} users: `;
  let shown = 0;
  let listed = "";
  for (const u of users) {
    const next = `${listed}${u}, `;
    if ((head + next).length + `… (+${count(users.length - shown - 1)})`.length > max) break;
    listed = next;
    shown++;
  }
  return `${head}${listed}… (+${count(users.length - shown)})`;
}

/**
 * What a history record shows in a table: text (whitespace runs as one space; the table cuts a
 * long one and says its length), or the membership or group event, or the payload size.
 */
export function recordText(r: RecordResult): string {
  if (r.membership) return membershipText(r.membership.op, r.membership.users);
  if (r.groupEvent) return r.groupEvent.op === "dissolve" ? "group dissolved" : r.groupEvent.op;
  if (r.text !== null) return r.text.replace(/\s+/g, " ");
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
