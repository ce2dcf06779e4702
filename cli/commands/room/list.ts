import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { roomListResult, type RoomListResult } from "../../rooms/results.js";
import { listText } from "../../rooms/text.js";
import { uuid } from "../../validate.js";

export default class RoomList extends ConnectedCommand<typeof RoomList> {
  static override summary = "List the open chat rooms of the tenant, across the cluster, with their online counts.";
  static override description = `A room is open while it has connections or messages to replay (spec 003 §1: nothing of it is stored). One row per room: its writer node, epoch (it grows whenever the writer restarts or moves), connections online across the cluster, messages this epoch, messages the ring keeps, and whether it was promoted to a group. By room id; at most --limit (1 to 500, default 100); "next" gives the next page's --after.

Any role. Exit codes: 0 listed (also none); 2 bad --after or --limit; 5 server unreachable; 6 refused certificate.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    "<%= config.bin %> <%= command.id %> --limit 500 --output json | jq '.rooms[] | {room, online}'",
  ];
  static override flags = {
    after: Flags.string({ description: "rooms with an id above this one (the previous page's next)" }),
    limit: Flags.integer({ char: "n", min: 1, max: 500, description: "rooms at most, 1 to 500 (default 100)" }),
  };

  async run(): Promise<RoomListResult> {
    const after = this.flags.after === undefined ? "" : uuid("--after", this.flags.after);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const limit = this.flags.limit ?? 100;
    const out = roomListResult({ ...(await client.listRooms({ tenant, after, limit })), tenant, limit });
    this.log(listText(out));
    return out;
  }
}
