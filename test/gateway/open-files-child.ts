/**
 * Child of loadgen.test.ts ("the open-file limit a run needs"): asks relaunchForOpenFiles for DEVICES
 * connections as a bench does, then prints the soft open-file limit it runs under and exits 7 (a
 * relaunched run's code comes back to the first process, which prints it and exits with it).
 * Usage: node dist/test/gateway/open-files-child.js DEVICES
 */
import { openFileLimits, relaunchForOpenFiles } from "../../bench/loadgen/index.js";

const relaunched = await relaunchForOpenFiles(Number(process.argv[2]));
if (relaunched !== null) {
  process.stdout.write(`relaunched, exit ${relaunched}\n`);
  process.exit(relaunched);
}
process.stdout.write(`soft limit ${openFileLimits()!.soft}\n`);
process.exit(7);
