/** Process helpers that are not engine concepts: free loopback ports, fault-injection fail points, token buckets, bounds on work in flight. */
export * from "./concurrency.js";
export * from "./failpoints.js";
export * from "./ports.js";
export * from "./keyed-serial.js";
export * from "./rate-limit.js";
