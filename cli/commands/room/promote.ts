import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { yesFlag, type Destructive } from "../../confirm.js";
import { roomPromoteResult, type RoomPromoteResult } from "../../rooms/results.js";
import { promoteText } from "../../rooms/text.js";
import { uuid } from "../../validate.js";

export default class RoomPromote extends ConnectedCommand<typeof RoomPromote> {
  static override summary = "Turn a chat room into a persistent group with the same id (spec 003 §1.6).";
  static override description = `The group is created with the room's id; its members are --owner and every user online in the room now, all with joined_at 0, and its conversation_seq starts at 1: the room's messages do not enter its history. Then the room takes no more messages (ROOM_SEND answers FAILED_PRECONDITION naming the group) and its connections get a last ROOM_BATCH window with promoted_to_group, telling the devices to send to the group from now on. It cannot be undone (dissolve the group to end it). A retry after a failure half-way finishes it. Audited.

Confirmation: on a terminal it asks first; --yes skips the question; without a terminal --yes is required (else exit 2, nothing changed).

Needs the operator or admin role. Exit codes: 0 promoted; 2 bad --room or --owner, or more users online than a group is created with; 3 the room is not open; 4 promoted already, or a group with that id exists; 5 server unreachable; 6 refused certificate or role; 130 not confirmed.`;
  static override examples = ["<%= config.bin %> <%= command.id %> --room 7c9e6679-7425-40de-944b-e07fc1f90ae7 --owner 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --yes"];
  static override flags = {
    room: Flags.string({ char: "r", required: true, description: "the room (UUID): the group's id" }),
    owner: Flags.string({ required: true, description: "the group's owner (UUID): a member whether online in the room or not" }),
    yes: yesFlag,
  };

  static override destructive: Destructive = { action: "promote the room (it takes no more room messages)" };

  async run(): Promise<RoomPromoteResult> {
    const room = uuid("--room", this.flags.room);
    const owner = uuid("--owner", this.flags.owner);
    const tenant = this.tenant();
    await this.askFirst(`Promote room ${room} to a group owned by ${owner}? Its online users become members and it takes no more room messages. [y/N] `);
    const { client } = await this.connect();
    const out = roomPromoteResult({ ...(await client.promoteRoom({ tenant, room, owner })), tenant, room });
    this.log(promoteText(out));
    return out;
  }
}
