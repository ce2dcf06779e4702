import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { cmdSendResult, type CmdSendResult } from "../../cmd/results.js";
import { sendText } from "../../cmd/text.js";
import { UsageError } from "../../exit-codes.js";
import { CMD_MAX_PAYLOAD_BYTES, CMD_MAX_RECIPIENTS } from "../../../core/base/index.js";
import { text, uuid } from "../../validate.js";

export default class CmdSend extends ConnectedCommand<typeof CmdSend> {
  static override summary = "Send a CMD (system command) message on a command channel: to a group's members or to named users.";
  static override description = `CMD messages (spec 001) travel on a command channel <source>____cmd (the suffix is added once: --channel g1 and --channel g1____cmd are the same channel), keyed by the channel id AND --type. A durable message gets the channel's next sequence through the commit path and an intent for each recipient's owner node; the recipients' next /message/sync (or qimctl cmd sync) returns it once, until they ack it.

Recipients: --to U (repeat, or separate with commas) names them for this message; without --to, a group channel (--type 2, the default) whose source is a group of the tenant goes to the group's active members, frozen at this commit (a user added later receives from the next message on). --from U is the sender (its own read seq starts at this message); without it the message is a system command. --no-persist delivers without storing: no sequence, no intent, nothing to sync. --client-msg-no makes the send idempotent: a retry with the same key answers the first commit (printed as a duplicate, exit 0).

Needs the admin, operator or drill role; audited. Exit codes: 0 sent (or duplicate); 2 bad input (nothing sent); 5 server unreachable or the owner is moving (retry; with --client-msg-no a retry is safe); 6 refused certificate or role.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --channel 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --text '{\"cmd\":\"refresh\"}'",
    {
      description: "To two named users, idempotent (a retry commits nothing new)",
      command: "<%= config.bin %> <%= command.id %> --channel ops --type 2 --to 1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f,0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --text reload --client-msg-no deploy-42",
    },
    {
      description: "A binary payload, delivered but not stored",
      command: "<%= config.bin %> <%= command.id %> --channel ops --to 1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f --no-persist --payload-base64 AAECAw==",
    },
  ];
  static override flags = {
    channel: Flags.string({ char: "c", required: true, description: "the channel: a source id (g1) or the command channel id (g1____cmd); printable ASCII, no |, at most 128 bytes with the suffix" }),
    type: Flags.integer({ default: 2, description: "the channel type, 1 … 255 (1 person, 2 group)" }),
    to: Flags.string({ multiple: true, delimiter: ",", description: "a recipient's user UUID (repeat, or separate with commas); default: the source group's active members" }),
    from: Flags.string({ description: "the sender's user UUID (default: a system command, from nobody)" }),
    "no-persist": Flags.boolean({ description: "deliver without storing: no sequence, nothing to sync" }),
    text: Flags.string({ char: "t", description: "the payload as UTF-8 text", exclusive: ["payload-base64"] }),
    "payload-base64": Flags.string({ description: "the payload as base64 bytes", exclusive: ["text"] }),
    "client-msg-no": Flags.string({ description: "idempotency key (WuKongIM client_msg_no): a retry with the same key answers the first commit" }),
    "red-dot": Flags.boolean({ description: "set header.red_dot" }),
    "sync-once": Flags.boolean({ description: "set header.sync_once" }),
  };

  async run(): Promise<CmdSendResult> {
    const f = this.flags;
    const channelId = f.channel.trim();
    if (channelId === "") throw new UsageError("--channel", "name the channel, e.g. --channel g1");
    if (!/^[\x21-\x7e]+$/.test(channelId) || channelId.includes("|")) throw new UsageError("--channel", "a channel id is printable ASCII without spaces or |");
    if (!Number.isInteger(f.type) || f.type < 1 || f.type > 255) throw new UsageError("--type", `must be a channel type from 1 to 255, got ${f.type}`);
    if (f.text === undefined && f["payload-base64"] === undefined) throw new UsageError("--text", "give the payload: --text T or --payload-base64 B");
    let payload: Buffer;
    if (f.text !== undefined) {
      payload = Buffer.from(text("--text", f.text, CMD_MAX_PAYLOAD_BYTES), "utf8");
    } else {
      const b64 = f["payload-base64"]!.trim();
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) throw new UsageError("--payload-base64", "not base64 (A-Z a-z 0-9 + / with = padding)");
      payload = Buffer.from(b64, "base64");
      if (payload.length === 0) throw new UsageError("--payload-base64", "the payload is empty");
      if (payload.length > CMD_MAX_PAYLOAD_BYTES) throw new UsageError("--payload-base64", `the payload is ${payload.length} bytes; at most ${CMD_MAX_PAYLOAD_BYTES}`);
    }
    const to = [...new Set((f.to ?? []).map((u) => u.trim()).filter((u) => u !== "").map((u) => uuid("--to", u)))];
    if (to.length > CMD_MAX_RECIPIENTS) throw new UsageError("--to", `names ${to.length} users; at most ${CMD_MAX_RECIPIENTS}`);
    const from = f.from === undefined ? "" : uuid("--from", f.from);
    const clientMsgNo = f["client-msg-no"]?.trim() ?? "";
    if (f["client-msg-no"] !== undefined && (clientMsgNo === "" || clientMsgNo.length > 128)) throw new UsageError("--client-msg-no", "must be 1 to 128 characters");
    const tenant = this.tenant();
    const { client } = await this.connect();
    const out = cmdSendResult({
      ...(await client.cmdSend({
        tenant, channelId, channelType: f.type, from, to, noPersist: f["no-persist"], payload, clientMsgNo, redDot: f["red-dot"], syncOnce: f["sync-once"],
      })),
      tenant,
    });
    this.log(sendText(out));
    return out;
  }
}
