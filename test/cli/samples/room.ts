/** Contract samples of the `room` commands (test/cli/result-samples.ts). */
import type RoomList from "../../../cli/commands/room/list.js";
import type RoomPromote from "../../../cli/commands/room/promote.js";
import type RoomReplay from "../../../cli/commands/room/replay.js";
import type RoomShow from "../../../cli/commands/room/show.js";
import { samplesOf, type ResultOf } from "../result-samples.js";

const tenant = "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c";
const room = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
const user = "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b";
const row = {
  room, writer: "dev-2", epoch: 3, earliestReplayRoomSeq: "844424930131969", latestRoomSeq: "844424930132088", messagesThisEpoch: 120, kept: 120, online: 5000,
  nodes: [{ nodeId: "dev-1", connections: 2500 }, { nodeId: "dev-2", connections: 2500 }], promotedToGroup: null, sinceMs: 1796000000123,
};

export const samples = {
  "room list": samplesOf<ResultOf<typeof RoomList>>(
    { tenant, rooms: [row], next: null, answeredBy: "dev-1" },
    { tenant, rooms: [{ ...row, promotedToGroup: room, nodes: [] }], next: room, answeredBy: null },
  ),
  "room show": samplesOf<ResultOf<typeof RoomShow>>({ tenant, ...row }),
  "room replay": samplesOf<ResultOf<typeof RoomReplay>>(
    {
      tenant, room, epoch: 3, earliestReplayRoomSeq: "844424930131969", latestRoomSeq: "844424930132088", replayTruncated: false, more: true, online: 2,
      messages: [{ roomSeq: "844424930131970", messageId: "3f2a0c1e-8b7d-4e6f-9a5b-1c2d3e4f5a6b", sender: user, senderDevice: "phone", createdAtMs: 1796000000200, contentType: "text/plain", text: "hi", payloadBase64: "aGk=" }],
    },
    { tenant, room, epoch: 4, earliestReplayRoomSeq: "1125899906842625", latestRoomSeq: "1125899906842624", replayTruncated: true, more: false, online: 0, messages: [] },
  ),
  "room promote": samplesOf<ResultOf<typeof RoomPromote>>({ tenant, room, group: room, members: [user], memberVersion: 1, lastRoomSeq: "844424930132088" }),
};
