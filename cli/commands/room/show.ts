import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { roomShowResult, type RoomShowResult } from "../../rooms/results.js";
import { showText } from "../../rooms/text.js";
import { uuid } from "../../validate.js";

export default class RoomShow extends ConnectedCommand<typeof RoomShow> {
  static override summary = "Show one chat room: its writer, epoch, window and online count.";
  static override description = `Asks the room's writer (the owner of its room unit), wherever it runs. online is the room's connections across the cluster (each node tells the writer its count every second); nodes says where they are. The window is what a ROOM_REPLAY can return: from earliestReplayRoomSeq to latestRoomSeq (room_seq = epoch << 48 | counter, decimal strings in JSON; epoch:counter in the text).

Any role. Exit codes: 0 shown; 2 bad --room; 3 the room is not open (nobody joined or wrote since its writer started); 5 server unreachable; 6 refused certificate.`;
  static override examples = ["<%= config.bin %> <%= command.id %> --room 7c9e6679-7425-40de-944b-e07fc1f90ae7", "<%= config.bin %> <%= command.id %> --room 7c9e6679-7425-40de-944b-e07fc1f90ae7 --output json | jq .online"];

  static override flags = {
    room: Flags.string({ char: "r", required: true, description: "the room (UUID)" }),
  };

  async run(): Promise<RoomShowResult> {
    const room = uuid("--room", this.flags.room);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const r = await client.getRoom({ tenant, room });
    const out = roomShowResult({ ...r.room!, tenant });
    this.log(showText(out));
    return out;
  }
}
