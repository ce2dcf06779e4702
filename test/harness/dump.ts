import type { ConversationKeys, RedisClient } from "../../core/index.js";

/**
 * Every given key with its type and full value, one line a key, for "nothing changed" checks:
 * two dumps are equal exactly when the keys hold the same data. Hashes and sets are sorted.
 */
export async function dumpKeys(client: RedisClient, keys: readonly string[]): Promise<string> {
  const lines: string[] = [];
  for (const key of keys) {
    const type = await client.type(key);
    let value: unknown = null;
    if (type === "string") value = await client.get(key);
    else if (type === "hash") value = Object.entries(await client.hgetall(key)).sort();
    else if (type === "zset") value = await client.zrange(key, "0", "-1", "WITHSCORES");
    else if (type === "list") value = await client.lrange(key, 0, -1);
    else if (type === "set") value = (await client.smembers(key)).sort();
    else if (type !== "none") value = `<${type}>`;
    lines.push(`${key} ${type} ${JSON.stringify(value)}`);
  }
  return lines.join("\n");
}

/** Every key of one conversation (its bucket's outbox included). */
export function conversationKeyList(k: ConversationKeys): string[] {
  return [k.cseq, k.hist, k.commits, k.idem, k.grpmeta, k.grpmembers, k.grpdeltas, k.vpending, k.readseq, k.unreadidx, k.outbox];
}
