import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

let version: string | undefined;

/** This package's version (the node's version in the cluster registry, ObserveService.GetServerInfo), read once. */
export function packageVersion(): string {
  if (version === undefined) {
    let dir = dirname(fileURLToPath(import.meta.url));
    while (!existsSync(join(dir, "package.json")) && dirname(dir) !== dir) dir = dirname(dir);
    version = (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string }).version;
  }
  return version;
}
