/**
 * The V8 flags the admin server runs with. Imports nothing: the launchers (the dev stack, the test
 * harness, the benchmarks) read them without loading the server.
 *
 * The server's young generation: V8's default semi-space (16 MiB on 64-bit) is scavenged about
 * every 12 ms under a steady stream of membership changes, and most of what a scavenge copies is
 * live (requests, group-commit batches, Redis replies and dispatch records in flight), so the
 * copying, not the garbage, is the cost. With 32 MiB semi-spaces, bench/admin measured 9–30 %
 * less server CPU per add+remove pair in the same rounds (64 MiB measured the same as 32).
 * Heap sizes are fixed when the process starts (v8.setFlagsFromString afterwards does not grow
 * the young generation), so `bin/qim-admin-server.js` carries the flag on its first line and every
 * program that starts the server with `node` passes SERVER_NODE_FLAGS before the script.
 */
export const SERVER_SEMI_SPACE_MIB = 32;

/** node's arguments before the server's script. */
export const SERVER_NODE_FLAGS: readonly string[] = [`--max-semi-space-size=${SERVER_SEMI_SPACE_MIB}`];

/**
 * The semi-space size this process was started with (MiB), from node's arguments or NODE_OPTIONS
 * (the later one wins, as node applies them); null when neither sets it (V8's default).
 */
export function semiSpaceMiB(execArgv: readonly string[] = process.execArgv, nodeOptions = process.env.NODE_OPTIONS ?? ""): number | null {
  let mib: number | null = null;
  for (const arg of [...nodeOptions.split(/\s+/), ...execArgv]) {
    const m = /^--max[-_]semi[-_]space[-_]size=(\d+)$/.exec(arg);
    if (m) mib = Number(m[1]);
  }
  return mib;
}
