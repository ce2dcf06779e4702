/**
 * Operations (issue 25, "operations free of transport"): what an admin RPC, an HTTP route or the
 * next WebSocket frame does in engine terms when it takes more than one engine module or applies a
 * spec rule over them. Each adapter parses its request at its edge into typed values (Uuid,
 * BoundedLimit) and calls the one function here; no adapter joins modules or applies such a rule
 * itself. Holds no state, keys or scripts.
 */
export { asOperator } from "./as-operator.js";
export { cmdOwnerOf, type CmdOwner } from "./cmd-owner.js";
export {
  changeConversation, listConversations,
  type ConversationListAction, type ConversationListEngines, type ConversationListEntry, type ConversationListPage,
} from "./conversation-list.js";
export { runRebuildDrill } from "./drill.js";
export { promoteRoom, type RoomPromotion } from "./room-promote.js";
