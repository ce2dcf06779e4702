/**
 * Waiting for the session projection to catch up, by state, never by time: the outboxes and the
 * fanout job queues are empty, every partition's lag is 0 and no registration is pending. Bounded
 * by a number of attempts.
 */
import type { Redis } from "ioredis";
import type { AdminServer } from "../../server/node.js";
import type { ProjectionStatus } from "../../core/index.js";

/** Commits not yet wholly in the dispatch log: outbox entries plus fanout jobs (issue 22) of every bucket. */
export async function outboxDepth(redis: Redis): Promise<number> {
  let depth = 0;
  for (const key of [...await redis.keys("*:outbox"), ...await redis.keys("*:fanout:jobs")]) depth += await redis.llen(key);
  return depth;
}

/**
 * The status once settled; throws after `attempts` polls (25 ms apart) with the last one. `outbox`
 * is the server's one Redis, or how to sum the outboxes of a topology.
 */
export async function projectionSettled(server: AdminServer, outbox: Redis | (() => Promise<number>), attempts = 400): Promise<ProjectionStatus> {
  const depth = typeof outbox === "function" ? outbox : () => outboxDepth(outbox);
  let last: ProjectionStatus | undefined;
  let left = -1;
  for (let i = 0; i < attempts; i++) {
    // the outbox first, then the status: an empty outbox means every relayed record is already in
    // the log, so a status read after it sees each one in the high watermark (read together, the
    // status could predate an append that the outbox read then saw done)
    left = await depth();
    last = await server.projection.status();
    if (left === 0 && last.partitions.every((p) => p.lag === 0) && last.pendingPerInstance.every((p) => p.depth === 0)) {
      // the conversation list holds rows for up to its compaction window (5 s) before it writes
      // them: read the log to its end and write what is held now, so that no flush of earlier
      // work lands later, in the middle of whatever the test does next
      const list = server.runtime.conversationList.compactor;
      await list.poll();
      await list.flush();
      // so does the CMD sync: its buffer flushes and flush points trail a send by up to seconds
      await server.runtime.cmd.settle();
      return last;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`the projection did not settle after ${attempts} polls: outbox ${left}, ${JSON.stringify(last)}`);
}
