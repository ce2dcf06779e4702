/** The load generator's surface: bench/loadgen.ts (its command line), bench/gateway.ts and the tests use it. */
export * from "./checker.js";
export * from "./device.js";
export * from "./run.js";
export * from "./target.js";
export * from "./search.js";
