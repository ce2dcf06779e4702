// The settings of a server process: one schema, resolved from flags, environment, a config file
// and defaults; shown by --print-config and docs/config-reference.md.
export * from "./schema.js";
export * from "./resolve.js";
export * from "./render.js";
