import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { ownerResult, type OwnerResult } from "../../cluster/results.js";
import { ownerText } from "../../cluster/text.js";
import { UsageError } from "../../exit-codes.js";
import { uuid } from "../../validate.js";

/** Relay buckets (commit buckets {bNNN}) of the engine. */
const RELAY_BUCKETS = 256;

export default class ClusterOwner extends ConnectedCommand<typeof ClusterOwner> {
  static override summary = "Which node owns a user's slot, a dispatch partition or a relay bucket, and its fencing token.";
  static override description = `Exactly one of --user (the user's slot: their session bucket {uNNN}, which holds their session keys; the tenant comes from --tenant, QIMCTL_TENANT or the context), --partition P (a dispatch-log partition: its projection consumer) or --bucket B (a relay bucket 0 … ${RELAY_BUCKETS - 1}: its outbox relay). Prints the owner's node id and node address and the token of its lease (tokens only grow: every owner-only write carries it and is refused when a newer one exists). A unit whose owner just died shows no owner until a live node takes it over (within the lease TTL plus one heartbeat).

Any role. Exit codes: 0 answered (also "no owner right now"); 2 none or more than one of --user/--partition/--bucket, a bad UUID or a unit out of range; 5 server unreachable; 6 refused certificate or role.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b",
    "<%= config.bin %> <%= command.id %> --partition 3 --output json",
    "<%= config.bin %> <%= command.id %> --bucket 200",
  ];
  static override flags = {
    user: Flags.string({ char: "u", description: "a user's UUID: the owner of the user's slot (with --tenant)" }),
    partition: Flags.integer({ char: "p", min: 0, max: 4_294_967_295, description: "a dispatch-log partition (0 … partitions − 1; a uint32 on the wire)" }),
    bucket: Flags.integer({ char: "b", description: `a relay bucket (0 … ${RELAY_BUCKETS - 1})` }),
  };

  async run(): Promise<OwnerResult> {
    const given = (["user", "partition", "bucket"] as const).filter((f) => this.flags[f] !== undefined);
    if (given.length !== 1) {
      throw new UsageError(given.length === 0 ? "--user" : `--${given[1]}`, `give exactly one of --user, --partition or --bucket${given.length > 1 ? `, not ${given.map((g) => `--${g}`).join(" and ")}` : ""}`);
    }
    const { partition, bucket } = this.flags;
    if (partition !== undefined && (!Number.isInteger(partition) || partition < 0)) throw new UsageError("--partition", `must be a partition number (0 or more), got ${partition}`);
    if (bucket !== undefined && (!Number.isInteger(bucket) || bucket < 0 || bucket >= RELAY_BUCKETS)) throw new UsageError("--bucket", `must be a relay bucket from 0 to ${RELAY_BUCKETS - 1}, got ${bucket}`);
    const who = this.flags.user !== undefined ? { tenant: this.tenant(), user: uuid("--user", this.flags.user) } : null;
    const { client } = await this.connect();
    const unit = who ? { $case: "user" as const, user: who } : partition !== undefined ? { $case: "partition" as const, partition } : { $case: "bucket" as const, bucket: bucket! };
    const out = ownerResult({ ...(await client.getUnitOwner({ unit })), user: who });
    this.log(ownerText(out));
    return out;
  }
}
