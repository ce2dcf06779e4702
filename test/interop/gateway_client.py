"""A device of the client gateway written with nothing of this project but its frames.proto.

Run by test/gateway/gateway.test.ts with Debian's /usr/bin/python3 (python3-websockets 10,
python3-grpc-tools for protoc and protobuf; see scripts/prerequisites.mjs):

1. builds the frames' message classes from proto/qim/client/v1/frames.proto with
   grpc_tools.protoc, into a temporary folder;
2. opens a WebSocket to the gateway with its device token in the Authorization header (and the
   frames' subprotocol), over TLS with the node's CA when the URL is wss://;
3. AUTH, PING, SEND (twice with one client_msg_no: the second is the first's ack), a SEND with
   another content under the same client_msg_no, the MESSAGE pushed to this device for its own
   send (every online device of the audience gets it; a device dedupes by message_id),
   PULL_HISTORY, and a frame of an unknown type.

Prints one JSON object on stdout with what each answer said. Any failure exits non-zero with the
reason on stderr.
"""

import argparse
import asyncio
import importlib.util
import json
import os
import ssl
import sys
import tempfile

import websockets
from grpc_tools import protoc

TIMEOUT_S = 20


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def load_frames(proto_root):
    out = tempfile.mkdtemp(prefix="qim-gw-py-")
    rc = protoc.main(["protoc", f"-I{proto_root}", f"--python_out={out}", os.path.join(proto_root, "qim/client/v1/frames.proto")])
    if rc != 0:
        sys.exit(f"protoc failed ({rc})")
    path = os.path.join(out, "qim", "client", "v1", "frames_pb2.py")
    spec = importlib.util.spec_from_file_location("frames_pb2", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


async def run(args, pb):
    ctx = None
    if args.url.startswith("wss://"):
        ctx = ssl.create_default_context(cafile=args.ca)
    headers = {"Authorization": f"Bearer {args.token}"}
    async with websockets.connect(args.url, extra_headers=headers, subprotocols=["qim.client.v1"], ssl=ctx, compression=None, open_timeout=TIMEOUT_S) as ws:
        next_id = [0]
        pushes = []

        room_events = []

        def keep(frame):
            if frame.request_id == 0 and frame.WhichOneof("body") == "message":
                m = frame.message
                pushes.append({"seq": m.conversation_seq, "message_id": m.message_id, "sender": m.sender, "text": m.payload.decode(errors="replace")})
            if frame.request_id == 0 and frame.WhichOneof("body") == "room_batch":
                for w in frame.room_batch.windows:
                    room_events.extend({"room": w.room, "room_seq": str(e.room_seq), "sender": e.sender, "text": e.payload.decode(errors="replace")} for e in w.events)

        async def request(fill):
            next_id[0] += 1
            f = pb.Frame(request_id=next_id[0])
            fill(f)
            await ws.send(f.SerializeToString())
            while True:
                raw = await asyncio.wait_for(ws.recv(), TIMEOUT_S)
                answer = pb.Frame()
                answer.ParseFromString(raw)
                if answer.request_id == next_id[0]:
                    return answer
                keep(answer)

        out = {"subprotocol": ws.subprotocol}
        a = await request(lambda f: f.auth.SetInParent() or setattr(f.auth, "device_id", args.device))
        out["auth"] = {"case": a.WhichOneof("body"), "user": a.auth_ok.user, "device": a.auth_ok.device_id, "server_time_ms": a.auth_ok.server_time_ms}
        p = await request(lambda f: f.ping.SetInParent())
        out["ping"] = p.WhichOneof("body")

        def send(no, text):
            def fill(f):
                f.send.client_msg_no = no
                f.send.group = args.group
                f.send.payload = text.encode()
                f.send.content_type = "text"
            return fill

        s1 = await request(send("py-1", "hello from python"))
        s2 = await request(send("py-1", "hello from python"))
        s3 = await request(send("py-1", "other content"))
        out["send"] = {"case": s1.WhichOneof("body"), "seq": s1.send_ack.conversation_seq, "message_id": s1.send_ack.message_id, "duplicate": s1.send_ack.duplicate}
        out["retry"] = {"case": s2.WhichOneof("body"), "seq": s2.send_ack.conversation_seq, "message_id": s2.send_ack.message_id, "duplicate": s2.send_ack.duplicate}
        out["conflict"] = {"case": s3.WhichOneof("body"), "code": s3.error.code}
        while not pushes:
            f = pb.Frame()
            f.ParseFromString(await asyncio.wait_for(ws.recv(), TIMEOUT_S))
            keep(f)

        def pull(f):
            f.pull_history.group = args.group
            f.pull_history.after_seq = 0
            f.pull_history.limit = 50
        h = await request(pull)
        out["history"] = {
            "case": h.WhichOneof("body"),
            "messages": [{"seq": m.conversation_seq, "sender": m.sender, "text": m.payload.decode(errors="replace"), "kind": m.kind} for m in h.history_batch.messages],
        }

        # a frame type this client does not know how to name: field 9999 of the Frame, bytes
        next_id[0] += 1
        raw = pb.Frame(request_id=next_id[0]).SerializeToString() + varint((9999 << 3) | 2) + b"\x00"  # field 9999, length-delimited, empty
        await ws.send(raw)
        while True:
            u = pb.Frame()
            u.ParseFromString(await asyncio.wait_for(ws.recv(), TIMEOUT_S))
            if u.request_id == next_id[0]:
                break
        out["unknown"] = {"case": u.WhichOneof("body"), "code": u.error.code}

        if args.watch:
            # presence (PRESENCE_SUB): the other member's state now
            def sub(f):
                f.presence_sub.group = args.group
                f.presence_sub.users.append(args.watch)
            w = await request(sub)
            out["presence"] = {"case": w.WhichOneof("body"), "states": [{"user": x.user, "online": x.online} for x in w.presence_sub_ack.states], "subscriptions": w.presence_sub_ack.subscriptions}
        if args.room:
            # a chat room: join, send, and its own message pushed back in a ROOM_BATCH (it is in the room)
            j = await request(lambda f: setattr(f.room_join, "room", args.room))

            def rsend(f):
                f.room_send.room = args.room
                f.room_send.client_msg_no = "py-room-1"
                f.room_send.content_type = "text/plain"
                f.room_send.payload = "hello room from python".encode()
            r = await request(rsend)
            while not room_events:
                f = pb.Frame()
                f.ParseFromString(await asyncio.wait_for(ws.recv(), TIMEOUT_S))
                keep(f)
            out["room"] = {
                "join": j.WhichOneof("body"), "epoch": j.room_batch.windows[0].room_epoch, "latest": str(j.room_batch.windows[0].latest_room_seq),
                "send": r.WhichOneof("body"), "room_seq": str(r.room_send_ack.room_seq), "pushed": room_events,
            }
        out["pushes"] = pushes
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--device", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--proto-root", required=True)
    ap.add_argument("--ca", default=None)
    ap.add_argument("--watch", default=None, help="a member of --group whose presence to subscribe to")
    ap.add_argument("--room", default=None, help="a chat room to join and send one message to")
    args = ap.parse_args()
    with open(args.token_file) as fh:
        args.token = fh.read().strip()
    pb = load_frames(args.proto_root)
    print(json.dumps(asyncio.run(run(args, pb))))


if __name__ == "__main__":
    main()
