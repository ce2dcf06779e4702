/** The benches' command line: `--name N` as a number (its default when absent). */
export function flag(name: string, dflt: number, argv: readonly string[] = process.argv.slice(2)): number {
  const i = argv.indexOf(name);
  return i >= 0 ? Number(argv[i + 1]) : dflt;
}
