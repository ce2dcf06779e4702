/**
 * The engine library, one module a folder (docs/architecture.md "Modules"): each folder's
 * index.ts is its whole surface. This file gathers them for programs that embed the engine.
 * A new module adds one line here.
 */
export * from "./base/index.js";
export * from "./metrics/index.js";
export * from "./lua/index.js";
export * from "./store/index.js";
export * from "./cassandra/index.js";
export * from "./cluster/index.js";
export * from "./conversation/index.js";
export * from "./dispatch/index.js";
export * from "./projection/index.js";
export * from "./conversation-list/index.js";
export * from "./runtime/index.js";
export * from "./session-view/index.js";
export * from "./cmd-log/index.js";
export * from "./cmd-sync/index.js";
export * from "./operations/index.js";
export * from "./tokens/index.js";
export * from "./registry/index.js";
export * from "./retention/index.js";
export * from "./delivery/index.js";
export * from "./reactions/index.js";
export * from "./rtc/index.js";
export * from "./rooms/index.js";
export * from "./presence/index.js";
