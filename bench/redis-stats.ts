/**
 * What the benches read off a redis-server about itself: its own CPU, and our scripts' names for
 * the SHA1 digests SLOWLOG and MONITOR show instead of them.
 */
import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import { loadScripts } from "../core/index.js";

/** redis-server's own CPU so far, in seconds (INFO cpu: used_cpu_sys + used_cpu_user, children excluded). */
export async function redisCpuSeconds(client: Redis): Promise<number> {
  const info = await client.info("cpu");
  const v = (k: string) => Number(new RegExp(`^${k}:([0-9.]+)`, "m").exec(info)?.[1] ?? 0);
  return v("used_cpu_sys") + v("used_cpu_user");
}

/** Our scripts by SHA1 of their text (EVALSHA's first argument) → their names. */
export function scriptNamesBySha(): Map<string, string> {
  return new Map([...loadScripts().values()].map((s) => [createHash("sha1").update(s.lua).digest("hex"), s.name]));
}
