/** Shared by the admin API tests: the "nothing changed" digest and awaiting a refused call. */
import assert from "node:assert/strict";
import type * as grpc from "@grpc/grpc-js";
import type { Redis } from "ioredis";
import { memberPages, type AdminClient, type Member } from "../../admin-api/client.js";
import { dumpKeys } from "../harness/dump.js";

/** Every key in the server's Redis with its full value, the dispatch log aside: "nothing changed" means this is equal. */
export async function storeDigest(redis: Redis): Promise<string> {
  // the CMD catch-up scan's flush points (cmdflushpt) are its own clock mark, raised every few
  // seconds whatever the requests do: not state a refused call could have changed
  return dumpKeys(redis, (await redis.keys("*")).filter((k) => !k.includes(":dlog:") && !k.endsWith(":cmdflushpt")).sort());
}

/** The error a call was refused with; fails the test when it succeeded. */
export async function rejected(p: Promise<unknown>): Promise<grpc.ServiceError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  assert.ok(err, "the call should have been refused");
  return err as grpc.ServiceError;
}

/** Every member of a group, all ListMembers pages read and collected (a test's groups are small enough), each user once. */
export async function allMembers(client: AdminClient, tenant: string, group: string): Promise<{ version: bigint; members: Member[] }> {
  const byUser = new Map<string, Member>();
  let version = 0n;
  for await (const page of memberPages(client, { tenant, group })) {
    version = page.version;
    for (const m of page.members) byUser.set(m.userId, m);
  }
  return { version, members: [...byUser.values()] };
}
