"""A gRPC client that knows nothing of the QIM admin API but what server reflection tells it.

Run by test/interop/python.test.ts with Debian's /usr/bin/python3 (python3-grpcio,
python3-grpc-tools; see scripts/prerequisites.mjs):

1. builds the reflection protocol's messages from the standard reflection.proto with
   grpc_tools.protoc, into a temporary folder;
2. over mTLS, lists the services and fetches the file that declares each one, with its
   dependencies, into a fresh descriptor_pool: Python's protobuf validates every file as it is
   added (the merged, camelCase descriptors of issue 10 were refused right there);
3. calls GroupService/ListMembers and Health/Check with message classes made from those
   descriptors alone.

Prints one JSON object on stdout: {"services": [...], "list_members": ..., "health": ...}, the
answers in canonical proto3 JSON. Any failure exits non-zero with the reason on stderr.
"""

import argparse
import importlib.util
import json
import os
import sys
import tempfile

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from grpc_tools import protoc

# Every call's deadline, below the test's own limit on this process.
CALL_TIMEOUT_S = 20


def reflection_messages(proto_root, version, out_dir):
    """The generated module of grpc/reflection/VERSION/reflection.proto."""
    name = f"grpc/reflection/{version}/reflection.proto"
    if protoc.main(["grpc_tools.protoc", f"-I{proto_root}", f"--python_out={out_dir}", name]) != 0:
        raise SystemExit(f"grpc_tools.protoc failed on {name}")
    # loaded by its path: under its dotted name (grpc.reflection...) Python would look inside grpcio
    spec = importlib.util.spec_from_file_location(f"reflection_{version}_pb2", os.path.join(out_dir, name[: -len(".proto")] + "_pb2.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Reflection:
    """ServerReflectionInfo, one request per stream."""

    def __init__(self, channel, messages, version):
        self._request = messages.ServerReflectionRequest
        self._info = channel.stream_stream(
            f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
            request_serializer=messages.ServerReflectionRequest.SerializeToString,
            response_deserializer=messages.ServerReflectionResponse.FromString,
        )

    def ask(self, **request):
        responses = list(self._info(iter([self._request(**request)]), timeout=CALL_TIMEOUT_S))
        if len(responses) != 1:
            raise SystemExit(f"reflection {request}: {len(responses)} answers to one request")
        answer = responses[0]
        if answer.HasField("error_response"):
            raise SystemExit(f"reflection {request}: error {answer.error_response.error_code} {answer.error_response.error_message}")
        return answer


def descriptors_of(reflection, services):
    """A descriptor pool of the files declaring `services`, each added after its dependencies."""
    files = {}
    for service in services:
        for raw in reflection.ask(file_containing_symbol=service).file_descriptor_response.file_descriptor_proto:
            files.setdefault(descriptor_pb2.FileDescriptorProto.FromString(raw).name, raw)
    pool = descriptor_pool.DescriptorPool()
    added = set()

    def add(name, wanted_by):
        if name in added:
            return
        if name not in files:
            raise SystemExit(f"reflection sent {wanted_by} without its dependency {name}")
        for dependency in descriptor_pb2.FileDescriptorProto.FromString(files[name]).dependency:
            add(dependency, name)
        pool.AddSerializedFile(files[name])
        added.add(name)

    for name in sorted(files):
        add(name, "(requested)")
    return pool


def message_class(pool, descriptor):
    # GetMessageClass is the newer protobuf API; Debian bookworm's 4.21 has the factory's GetPrototype
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


def call(channel, pool, full_method, request_json):
    """A unary call of SERVICE/METHOD with its request as proto3 JSON; the answer as proto3 JSON."""
    service, method_name = full_method.split("/")
    method = pool.FindServiceByName(service).methods_by_name[method_name]
    request_class = message_class(pool, method.input_type)
    response_class = message_class(pool, method.output_type)
    rpc = channel.unary_unary(f"/{full_method}", request_serializer=request_class.SerializeToString, response_deserializer=response_class.FromString)
    return json_format.MessageToDict(rpc(json_format.ParseDict(request_json, request_class()), timeout=CALL_TIMEOUT_S))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", required=True, help="host:port")
    parser.add_argument("--ca", required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--proto-root", required=True, help="the folder holding grpc/reflection/VERSION/reflection.proto")
    parser.add_argument("--reflection", required=True, choices=["v1", "v1alpha"])
    parser.add_argument("--tenant", required=True)
    parser.add_argument("--group", required=True)
    args = parser.parse_args()

    def read(path):
        with open(path, "rb") as f:
            return f.read()

    credentials = grpc.ssl_channel_credentials(root_certificates=read(args.ca), private_key=read(args.key), certificate_chain=read(args.cert))
    with tempfile.TemporaryDirectory() as out_dir, grpc.secure_channel(args.target, credentials) as channel:
        reflection = Reflection(channel, reflection_messages(args.proto_root, args.reflection, out_dir), args.reflection)
        services = sorted(s.name for s in reflection.ask(list_services="*").list_services_response.service)
        pool = descriptors_of(reflection, services)
        result = {
            "services": services,
            "list_members": call(channel, pool, "qim.admin.v1.GroupService/ListMembers", {"tenant": args.tenant, "group": args.group}),
            "health": call(channel, pool, "grpc.health.v1.Health/Check", {}),
        }
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
