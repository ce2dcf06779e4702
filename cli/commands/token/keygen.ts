import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import * as Flags from "@oclif/core/flags";
import { BaseCommand } from "../../base.js";
import { yesFlag, type Destructive } from "../../confirm.js";
import { UsageError } from "../../exit-codes.js";
import type { TokenKeygenResult } from "../../token/results.js";
import { keygenText } from "../../token/text.js";

export default class TokenKeygen extends BaseCommand<typeof TokenKeygen> {
  static override summary = "Make or rotate the device tokens' key file (a JSON Web Key Set) on this machine.";
  static override description = `Generates a new signing key (Ed25519 by default, or P-256 with --alg ES256). Without --rotate it makes a new --keys FILE holding that key (refused when FILE exists). With --rotate it writes the new key FIRST in the existing FILE: the newest key signs new tokens; the file's previous newest key stays second, so tokens it signed keep verifying; any older key leaves the file, and tokens it signed stop verifying (named in the output). A rotation asks first on a terminal; without one it needs --yes. A node reads the file given by its setting tokens.keys at start-up and again within a second when it changes: a rotation needs no restart. Copy the same file to every node (or, to a node that must only verify, the public set written with --public FILE).

The key never passes through argv, the environment or a log: it is generated here and written to FILE (mode 0600, replaced atomically); only key ids are printed. Nothing is sent to a server.

Exit codes: 0 written; 2 bad flags, FILE exists without --rotate (or is missing with it), an unreadable or malformed FILE, or --rotate without --yes and without a terminal; 130 not confirmed.`;
  static override examples = [
    { description: "The first key", command: "<%= config.bin %> <%= command.id %> --keys /etc/qim/token-keys.json" },
    { description: "Rotate: a new key signs, the previous one still verifies, the oldest leaves", command: "<%= config.bin %> <%= command.id %> --keys /etc/qim/token-keys.json --rotate --yes" },
    "<%= config.bin %> <%= command.id %> --keys token-keys.json --alg ES256 --public token-keys.public.json --dry-run",
  ];
  static override flags = {
    keys: Flags.string({ char: "k", required: true, description: "the key file to create or rotate (the path the server's tokens.keys names)" }),
    alg: Flags.string({ options: ["EdDSA", "ES256"], default: "EdDSA", description: "the new key's algorithm: EdDSA (Ed25519) or ES256 (P-256)" }),
    public: Flags.string({ description: "also write the public keys (no private parts) to this file, for nodes that only verify" }),
    "dry-run": Flags.boolean({ description: "say what would be written; write nothing" }),
    rotate: Flags.boolean({ char: "r", description: "add the new key to an existing FILE (the oldest of its keys leaves when it holds two)" }),
    yes: yesFlag,
  };
  static override destructive: Destructive = { action: "rotate the token keys", onlyWith: "rotate", exceptWith: "dry-run" };

  async run(): Promise<TokenKeygenResult> {
    const { generateTokenKey, publicTokenKeys, rotateTokenKeys } = await import("../../../core/tokens/index.js");
    const file = this.flags.keys;
    const alg = this.flags.alg as "EdDSA" | "ES256";
    let existing: string | null = null;
    const rotate = this.flags.rotate === true;
    if (existsSync(file) !== rotate) {
      throw new UsageError(rotate ? "--rotate" : "--keys", rotate ? `${file} does not exist: make the first key without --rotate` : `${file} exists: pass --rotate to add a new signing key to it (nothing was written)`);
    }
    if (rotate) {
      try {
        existing = readFileSync(file, "utf8");
      } catch (err) {
        throw new UsageError("--keys", `cannot read ${file}: ${(err as Error).message}`);
      }
    }
    const key = await generateTokenKey(alg);
    let r: Awaited<ReturnType<typeof rotateTokenKeys>>;
    try {
      r = await rotateTokenKeys(existing, key, file);
    } catch (err) {
      throw new UsageError("--keys", `${(err as Error).message}; nothing was written`);
    }
    const out: TokenKeygenResult = { file, keyId: key.kid, alg, keys: r.kept, dropped: r.dropped, publicFile: this.flags.public ?? null, dryRun: this.flags["dry-run"] === true };
    if (!out.dryRun) {
      await this.askFirst(`Rotate ${file}: ${key.kid} signs from now on${r.dropped.length > 0 ? `; key(s) ${r.dropped.join(", ")} leave the file and tokens they signed stop verifying` : ""}. Go ahead? [y/N] `);
      writePrivate(file, r.text);
      if (out.publicFile) writeFileSync(out.publicFile, publicTokenKeys(r.text), { mode: 0o644 });
    }
    this.log(keygenText(out));
    return out;
  }
}

/** Written beside the file and renamed over it: a node that reads it meanwhile sees the old or the new set, never half of one. */
function writePrivate(file: string, text: string): void {
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, text, { mode: 0o600 });
  renameSync(tmp, file);
}
