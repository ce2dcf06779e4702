import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { UsageError } from "../../exit-codes.js";
import { roomReplayResult, type RoomReplayResult } from "../../rooms/results.js";
import { replayText } from "../../rooms/text.js";
import { uuid } from "../../validate.js";

export default class RoomReplay extends ConnectedCommand<typeof RoomReplay> {
  static override summary = "Read a chat room's recent messages from its writer's window, as a device's ROOM_REPLAY would.";
  static override description = `The messages after --after (a room_seq: the decimal form, or EPOCH:COUNTER as the text shows it; default: from the window's start), at most --limit (1 to 100, default 100). A cursor of another epoch or outside the window answers replay_truncated with nothing — the room's steady state, not an error (spec 003 §1.4). Reads only; the writer's ring is in memory and a restart empties it.

Any role. Exit codes: 0 read (also nothing); 2 bad --room, --after or --limit; 3 the room is not open; 5 server unreachable; 6 refused certificate.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --room 7c9e6679-7425-40de-944b-e07fc1f90ae7",
    "<%= config.bin %> <%= command.id %> --room 7c9e6679-7425-40de-944b-e07fc1f90ae7 --after 3:120 --limit 20 --output json",
  ];
  static override flags = {
    room: Flags.string({ char: "r", required: true, description: "the room (UUID)" }),
    after: Flags.string({ description: "the cursor: a room_seq (decimal) or EPOCH:COUNTER (default: the window's start)" }),
    limit: Flags.integer({ char: "n", min: 1, max: 100, description: "messages at most, 1 to 100 (default 100)" }),
  };

  async run(): Promise<RoomReplayResult> {
    const room = uuid("--room", this.flags.room);
    const tenant = this.tenant();
    const { client } = await this.connect();
    let after: bigint;
    if (this.flags.after === undefined) {
      // from the window's start: one before its earliest
      const r = await client.getRoom({ tenant, room });
      after = r.room!.earliestReplayRoomSeq - 1n;
    } else {
      after = parseRoomSeq(this.flags.after);
    }
    const out = roomReplayResult({ ...(await client.replayRoom({ tenant, room, afterRoomSeq: after, limit: this.flags.limit ?? 0 })), tenant, room });
    this.log(replayText(out));
    return out;
  }
}

/** A room_seq from the command line: decimal, or EPOCH:COUNTER (epoch 0 to 65535, counter below 2^48). */
export function parseRoomSeq(text: string): bigint {
  const m = /^(\d{1,5}):(\d{1,15})$/.exec(text);
  if (m) {
    const epoch = BigInt(m[1]!);
    const counter = BigInt(m[2]!);
    if (epoch > 65535n || counter >= 1n << 48n) throw new UsageError("--after", "EPOCH is 0 to 65535 and COUNTER below 2^48");
    return (epoch << 48n) | counter;
  }
  if (!/^\d{1,20}$/.test(text) || BigInt(text) >= 1n << 64n) throw new UsageError("--after", "a room_seq: a decimal number below 2^64, or EPOCH:COUNTER");
  return BigInt(text);
}
