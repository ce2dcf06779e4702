/** The runtime: builds the engine's parts over one store and starts, stops and reports on them through one list of modules (modules.ts). */
export * from "./runtime.js";
export type { RuntimeModule } from "./modules.js";
