import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { UsageError } from "../../exit-codes.js";
import { retentionShowResult, type RetentionShowResult } from "../../retention/results.js";
import { showText } from "../../retention/text.js";
import { retentionAge, retentionClass, uuid } from "../../validate.js";

export default class RetentionSet extends ConnectedCommand<typeof RetentionSet> {
  static override summary = "Set a retention class of the tenant, or a group's own class or rule.";
  static override description = `Without --group: sets the rule of the class --class (--max-age and/or --max-count; 0 or off turns that limit off), --default makes it the class of every conversation without a setting of its own, --remove removes the class. A tenant's first class starts its policy: from then on its conversations and CMD channels are trimmed by their rules at the next rounds (qimctl retention run --dry-run shows what would go).

With --group G: the group uses the class --class, or its own rule (--max-age, --max-count), which wins over any class; --clear removes the group's setting (back to the default class). The group must exist.

What is trimmed is gone: history below the new floor, its unread index and idempotency ids (a retry of a trimmed message commits again). Checked before anything is written. Needs the operator or admin role; audited. Exit codes: 0 set; 2 bad or conflicting flags; 3 no such group; 5 server unreachable; 6 refused certificate or role.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --class standard --max-age 30d --default",
    "<%= config.bin %> <%= command.id %> --class chatty --max-count 10000 --max-age 7d",
    "<%= config.bin %> <%= command.id %> --group 8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c --class chatty",
    "<%= config.bin %> <%= command.id %> --group 8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c --max-count 500 --output json",
    "<%= config.bin %> <%= command.id %> --group 8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c --clear",
  ];
  static override flags = {
    class: Flags.string({ char: "c", description: "a retention class: 1–64 of a-z 0-9 - _, starting with a letter or digit" }),
    group: Flags.string({ char: "g", description: "set this group's own class or rule instead (UUID)" }),
    "max-age": Flags.string({ description: "trim what is older than this: 90m, 12h, 30d (a bare number is seconds); 0 or off: no age limit" }),
    "max-count": Flags.integer({ min: 0, description: "keep at most this many seqs behind the newest; 0: no count limit" }),
    default: Flags.boolean({ description: "make --class the tenant's default class" }),
    remove: Flags.boolean({ description: "remove the class --class from the tenant's policy" }),
    clear: Flags.boolean({ description: "remove the group's own setting (with --group)" }),
  };

  async run(): Promise<RetentionShowResult> {
    const f = this.flags;
    const name = f.class === undefined ? undefined : retentionClass("--class", f.class);
    const age = f["max-age"] === undefined ? undefined : retentionAge("--max-age", f["max-age"]);
    const count = f["max-count"];
    const hasRule = age !== undefined || count !== undefined;
    const rule = hasRule ? { maxAgeMs: BigInt(age ?? 0), maxCount: BigInt(count ?? 0) } : undefined;
    const tenant = this.tenant();
    if (f.group !== undefined) {
      const group = uuid("--group", f.group);
      if (f.default) throw new UsageError("--default", "--default names the tenant's default class; it does not go with --group");
      if (f.remove) throw new UsageError("--remove", "--remove removes a class of the tenant; a group's setting goes with --clear");
      if (f.clear && (name !== undefined || hasRule)) throw new UsageError("--clear", "--clear removes the group's setting: give no --class, --max-age or --max-count with it");
      if (!f.clear && name === undefined && !hasRule) throw new UsageError("--group", "say what the group gets: --class NAME, --max-age and/or --max-count, or --clear");
      const { client } = await this.connect();
      const out = retentionShowResult(await client.setGroupRetention({ tenant, group, retentionClass: f.clear ? "" : name ?? "", ...(rule && !f.clear ? { rule } : {}) }));
      this.log(showText(out));
      return out;
    }
    if (f.clear) throw new UsageError("--clear", "--clear removes a group's setting: give --group");
    if (name === undefined) throw new UsageError("--class", "name the class (--class NAME), or a group (--group G)");
    if (f.remove && (hasRule || f.default)) throw new UsageError("--remove", "--remove takes no rule and no --default");
    if (!f.remove && !hasRule) throw new UsageError("--max-age", "give the class a rule: --max-age and/or --max-count (0 or off turns a limit off), or --remove it");
    const { client } = await this.connect();
    const out = retentionShowResult(await client.setRetentionClass({ tenant, name, ...(rule ? { rule } : {}), makeDefault: f.default }));
    this.log(showText(out));
    return out;
  }
}
