/** What every `conversation <action>` command shares: --group, --as, one ChangeConversation call. */
import type { Command } from "@oclif/core";
import * as Flags from "@oclif/core/flags";
import { ConversationAction } from "../../admin-api/client.js";
import { ConnectedCommand } from "../base.js";
import { rowResult, type RowResult } from "../sessions/results.js";
import { uuid } from "../validate.js";

export type ActionName = "clear" | "delete" | "pin" | "unpin" | "mute" | "unmute" | "archive" | "unarchive";

const ACTION: Record<ActionName, ConversationAction> = {
  clear: ConversationAction.CONVERSATION_ACTION_CLEAR,
  delete: ConversationAction.CONVERSATION_ACTION_DELETE,
  pin: ConversationAction.CONVERSATION_ACTION_PIN,
  unpin: ConversationAction.CONVERSATION_ACTION_UNPIN,
  mute: ConversationAction.CONVERSATION_ACTION_MUTE,
  unmute: ConversationAction.CONVERSATION_ACTION_UNMUTE,
  archive: ConversationAction.CONVERSATION_ACTION_ARCHIVE,
  unarchive: ConversationAction.CONVERSATION_ACTION_UNARCHIVE,
};

export const conversationFlags = {
  group: Flags.string({ char: "g", required: true, description: "the group (conversation) UUID" }),
  as: Flags.string({ required: true, description: "the user UUID to act as: the change is to THEIR list (support action, audited)" }),
};

export interface ConversationChangeResult {
  user: string;
  group: string;
  action: ActionName;
  /** The row after the change, absolute values. */
  row: RowResult;
}

export const ROLES_TEXT = "Needs the operator or admin role; audited with your certificate's name. Exit codes: 0 done (also when it already was: the row is printed as it is); 2 bad --group/--as; 5 server unreachable; 6 refused certificate or role, or the user has no such conversation (PERMISSION_DENIED: no right and no conversation look the same).";

export abstract class ConversationActionCommand<T extends typeof Command> extends ConnectedCommand<T> {
  protected abstract readonly action: ActionName;

  protected async change(opts: { pinRank?: number; question?: string } = {}): Promise<ConversationChangeResult> {
    const flags = this.flags as unknown as { group: string; as: string };
    const group = uuid("--group", flags.group);
    const user = uuid("--as", flags.as);
    const tenant = this.tenant();
    const { client } = await this.connect();
    if (opts.question) await this.askFirst(opts.question);
    const r = await client.changeConversation({ tenant, user, group, action: ACTION[this.action], ...(opts.pinRank !== undefined ? { pinRank: opts.pinRank } : {}) });
    const out: ConversationChangeResult = { user, group, action: this.action, row: rowResult(r.row!) };
    this.log(changedText(out));
    return out;
  }
}

export function changedText(r: ConversationChangeResult): string {
  const row = r.row;
  const state = row.deleted ? "deleted from the list (it comes back with the next message)" : `unread ${row.unread}, mentions ${row.mentions}${row.pinRank !== null ? `, pinned (rank ${row.pinRank})` : ""}${row.muted ? ", muted" : ""}${row.archived ? ", archived" : ""}`;
  return `Conversation ${r.group} of user ${r.user}: ${r.action} done (version ${row.version}); ${state}`;
}
