/** What every module stands on: identifiers, domain errors, per-call limits, operator text, TLS facts, topology, hash tags, keys. */
export * from "./bucket.js";
export * from "../errors/index.js";
export * from "./ids.js";
export * from "./limits.js";
export { KeySpace } from "./keys.js";
export * from "./text.js";
export * from "./tls.js";
export * from "./topology.js";
