/** The runtime: builds the engine's modules over one store and starts and stops them together. */
export * from "./runtime.js";
export { engineModules, type ModuleContext, type RuntimeModule } from "./modules.js";
