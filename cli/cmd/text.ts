/** Table-mode text of the `cmd` commands. */
import { table } from "../format.js";
import type { CmdAckResult, CmdBadFileResult, CmdFlushResult, CmdMessageResult, CmdOwnerResult, CmdPendingResult, CmdSendResult, CmdStateResult, CmdStatusResult, CmdSyncResult } from "./results.js";

const served = (by: string | null) => (by ? ` (served by node ${by})` : "");
const shortText = (m: CmdMessageResult) => (m.text !== null ? JSON.stringify(m.text.length > 60 ? `${m.text.slice(0, 57)}...` : m.text) : `<${Buffer.from(m.payloadBase64, "base64").length} bytes>`);

export function sendText(out: CmdSendResult): string {
  const m = out.message;
  const where = `${m.channelId} (type ${m.channelType})`;
  if (m.noPersist) return `Delivered to ${m.recipients.length} recipient(s) on ${where}: no-persist, not stored (message ${m.messageId})`;
  const first = out.duplicate ? `Duplicate of seq ${m.messageSeq} on ${where}: client_msg_no ${m.clientMsgNo} was committed before, nothing written` : `Committed seq ${m.messageSeq} on ${where} to ${m.recipients.length} recipient(s) (message ${m.messageId}, client_msg_no ${m.clientMsgNo})`;
  return out.intentAccepted || out.duplicate ? first : `${first}\nnote: an owner of a recipient did not take the intent now; its catch-up scan derives it`;
}

export function messagesTable(messages: readonly CmdMessageResult[]): string {
  return table(
    ["CHANNEL", "TYPE", "SEQ", "FROM", "TIME", "PAYLOAD"],
    messages.map((m) => [m.channelId, m.channelType, m.messageSeq, m.from ?? "(system)", new Date(m.timestampMs).toISOString(), shortText(m)]),
  );
}

const PEEK_NOTE = "a peek: no generation recorded, the application's next ack applies what it was answered";

export function syncText(out: CmdSyncResult): string {
  const recorded = out.generation === null ? PEEK_NOTE : `generation ${out.generation}`;
  if (out.messages.length === 0) return `Nothing to sync for user ${out.user}${served(out.servedBy)}; ${recorded}`;
  const head = `${messagesTable(out.messages)}\n${out.messages.length} message(s) for user ${out.user}${served(out.servedBy)}`;
  return out.generation === null ? `${head}; ${recorded}` : `${head}, ${recorded}; ack it with: qimctl cmd ack --user ${out.user}`;
}

export function ackText(out: CmdAckResult): string {
  if (out.generation === null) return `Nothing acked for user ${out.user}${served(out.servedBy)}: no sync generation to apply (none recorded, already acked, or expired)`;
  const line = `Acked sync generation ${out.generation} of user ${out.user}${served(out.servedBy)}: ${out.advanced} durable row(s) advanced, ${out.cleared} pending entr${out.cleared === 1 ? "y" : "ies"} cleared`;
  return out.warning ? `${line}\nwarning: ${out.warning}` : line;
}

export function pendingText(out: CmdPendingResult): string {
  if (out.entries.length === 0) return `Nothing pending for user ${out.user}${served(out.servedBy)}`;
  return table(["CHANNEL", "TYPE", "LAST SEQ", "READ SEQ", "ACTIVE AT"], out.entries.map((e) => [e.channelId, e.channelType, e.lastMsgSeq, e.readSeq, new Date(e.activeAtMs).toISOString()]))
    + `\n${out.entries.length} pending channel(s)${served(out.servedBy)}`;
}

export function stateText(out: CmdStateResult): string {
  if (out.rows.length === 0) return `No durable CMD conversation state for user ${out.user}`;
  return table(["CHANNEL", "TYPE", "READ SEQ", "DELETED TO", "ACTIVE AT", "UPDATED AT"],
    out.rows.map((r) => [r.channelId, r.channelType, r.readSeq, r.deletedToSeq, new Date(r.activeAtMs).toISOString(), new Date(r.updatedAtMs).toISOString()]));
}

export function ownerText(out: CmdOwnerResult): string {
  if (!out.clustered) return `User ${out.user} (slot ${out.slot}): the server is not a cluster node; it serves every user's CMD sync itself`;
  if (out.nodeId === null) return `User ${out.user} (slot ${out.slot}) has no live owner right now (its lease is being taken over; last token ${out.token})`;
  return `User ${out.user} (slot ${out.slot}) is served by node ${out.nodeId} at ${out.address ?? "(no address)"}, token ${out.token}${out.alive ? "" : " (its lease has expired)"}`;
}

export function flushText(out: CmdFlushResult): string {
  return `Flushed ${out.nodeId ? `node ${out.nodeId}` : "the server"}: ${out.rows} row(s) in ${out.batches} batch(es)${out.failedBatches > 0 ? `, ${out.failedBatches} failed (they stay pending)` : ""}`;
}

/** The warning an operator must act on, one line per .bad file (the status table and the dashboard print it). */
export function badFileWarning(b: CmdBadFileResult): string {
  return `warning: ${b.nodeId ? `node ${b.nodeId}` : "the server"}: its CMD pending file did not decode at start-up and was set aside as ${b.path}${b.setAsideAt ? ` at ${b.setAsideAt}` : ""}; inspect it, then delete it (docs/operator-guide.md "CMD sync")`;
}

export function statusText(out: CmdStatusResult): string {
  const head = `CMD sync on ${out.answeredBy ? `node ${out.answeredBy}` : "the server"}: ${out.pendingEntries} pending entr${out.pendingEntries === 1 ? "y" : "ies"} not yet flushed`;
  if (out.badFiles.length === 0) return `${head}\nNo pending file set aside as .bad`;
  return [head, table(["NODE", "BAD FILE", "SET ASIDE AT"], out.badFiles.map((b) => [b.nodeId ?? "(this server)", b.path, b.setAsideAt ?? "unknown"])),
    ...out.badFiles.map(badFileWarning)].join("\n");
}
