import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { watchLine, type WatchLine } from "../../sessions/results.js";
import { watchText } from "../../sessions/text.js";
import { uuid } from "../../validate.js";

export default class SessionsWatch extends ConnectedCommand<typeof SessionsWatch> {
  static override summary = "Print a user's SESSION_DELTA and badge frames as they happen, until Ctrl+C.";
  static override description = `Each frame is the absolute state of one conversation of the user's list (head, unread, mentions, pinned, muted, archived, deleted) or of the user's badge, at the user's projection version (spec 002 §5). Frames of one conversation inside the server's merge window (150 ms) are merged: only the newest is sent. The first line is the current badge.

previousVersion is the version of the frame sent before on this stream: a client holding less than it missed frames and must pull the list again (sessions --user U), never add anything up. The same stream is what the client gateway serves.

Table mode prints one line per frame; with --output json, one JSON object per line. Ctrl+C ends it (exit 130); a reader that stops reading (| head) ends it quietly; the server going away or shutting down ends it with exit 5.

Any role. Exit codes: 0 the reader went away; 2 bad --user (checked before connecting); 5 server unreachable or gone; 6 refused certificate; 130 Ctrl+C.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b",
    {
      description: "Only the badge, as JSON lines",
      command: "<%= config.bin %> <%= command.id %> -u 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --output json | jq -c 'select(.kind == \"badge\") | .badge'",
    },
  ];
  static override flags = {
    user: Flags.string({ char: "u", required: true, description: "the user's UUID" }),
  };

  async run(): Promise<WatchLine> {
    const user = uuid("--user", this.flags.user);
    const tenant = this.tenant();
    const { client } = await this.connect();
    return this.printStream((onEvent) => client.watchUser({ tenant, user }, onEvent), (e: Parameters<typeof watchLine>[0]) => [watchLine(e)], watchText);
  }
}
