/** The process's one prom-client registry, which every module registers its metrics in (kept out of base so that loading ids and errors does not load prom-client). */
export { registry } from "./registry.js";
