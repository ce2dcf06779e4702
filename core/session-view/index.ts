/**
 * The session view (spec 002 §5, §6): the in-memory snapshot of each user's conversation list with
 * its keyset cursor, the SESSION_DELTA merge window and watchers, and the client-side applier. Reads
 * the conversation-list engine only through ConversationRowSource; holds no keys and no scripts
 * (everything here is memory, rebuilt from the engine's rows).
 */
export * from "./applier.js";
export * from "./cursor.js";
export * from "./delta.js";
export * from "./order.js";
export * from "./rows.js";
export * from "./service.js";
export * from "./snapshot.js";
