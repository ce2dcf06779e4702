import type { ConversationList } from "../conversation-list/index.js";
import type { DrillOptions, DrillReport, RebuildDrill } from "../projection/index.js";

/**
 * The rebuild drill (`qimctl drill rebuild`) over the whole engine: the projection's wipe and
 * rebuild, then the conversation list's cached unread, mentions and badge checked against the
 * definition. The projection cannot import the conversation list (it is built above it), so the
 * two meet here rather than in a transport's handler.
 */
export function runRebuildDrill(engines: { drill: RebuildDrill; conversationList: ConversationList }, opts: Omit<DrillOptions, "compare">): Promise<DrillReport> {
  return engines.drill.run({ ...opts, compare: engines.conversationList.drillComparator });
}
