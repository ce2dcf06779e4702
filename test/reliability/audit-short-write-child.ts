/**
 * Child of audit-short-write.test.ts, run under a file size limit (ulimit -f): appends one record
 * that crosses the limit and prints whether the audit log reported it written or refused.
 */
import { AuditLog } from "../../server/audit.js";

process.on("SIGXFSZ", () => {}); // the write fails with EFBIG instead of killing the process
const log = await AuditLog.open(process.argv[2]!);
try {
  await log.append({
    time: new Date().toISOString(), principal: "oscar", role: "operator", rpc: "/qim.admin.v1.GroupService/AddMembers", arguments: {},
    result: "OK", detail: "d".repeat(3000), durationMs: 1, requestId: "crossing", fingerprint: "",
  });
  process.stdout.write("written\n");
} catch (err) {
  process.stdout.write(`refused ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}\n`);
}
await log.close().catch(() => {});
