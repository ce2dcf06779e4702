/**
 * gRPC server reflection (grpc.reflection.v1 and v1alpha), answered with protoc's own descriptors.
 *
 * @grpc/reflection re-derives descriptors from a proto-loader package definition: it merges every
 * file of a package into one "qim_admin_v1.proto" with camelCase field names, which grpcurl and
 * Python's descriptor pool refuse whole (a map field's name no longer matches its implicit entry
 * message), and with it every call by reflection (issue 10). Here every answer carries the
 * FileDescriptorProto bytes exactly as protoc wrote them at build time (scripts/proto-gen.sh →
 * gen/descriptor-set.ts): each file's own name, package, snake_case fields, dependencies and
 * comments, never a re-serialisation.
 *
 * What is listed is what the server registered, and each of those services must be described by
 * the descriptor set (and each described one registered): serveReflection() refuses a mismatch at
 * start-up instead of listing a service that nobody can describe or call.
 */
import * as grpc from "@grpc/grpc-js";
import { fromBinary } from "@bufbuild/protobuf";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { FileDescriptorProtoSchema, type DescriptorProto, type EnumDescriptorProto, type FieldDescriptorProto, type FileDescriptorProto } from "@bufbuild/protobuf/wkt";
import { SERVED_DESCRIPTOR_SET_BASE64 } from "../../../admin-api/gen/descriptor-set.js";
import {
  ServerReflectionService as ReflectionV1Service,
  type ServerReflectionRequest,
  type ServerReflectionResponse,
} from "../../../admin-api/gen/grpc/reflection/v1/reflection.js";
import { ServerReflectionService as ReflectionV1AlphaService } from "../../../admin-api/gen/grpc/reflection/v1alpha/reflection.js";

/** grpc-js's HandleCall, which its index does not export by that name. */
type HandleCall<Req, Res> =
  | grpc.handleUnaryCall<Req, Res> | grpc.handleClientStreamingCall<Req, Res> | grpc.handleServerStreamingCall<Req, Res> | grpc.handleBidiStreamingCall<Req, Res>;

/** `repeated FileDescriptorProto file = 1;` of google.protobuf.FileDescriptorSet. */
const FILE_DESCRIPTOR_SET_FILE_FIELD = 1;

/** The descriptors of one FileDescriptorSet, indexed the way reflection asks for them. */
class DescriptorIndex {
  /** Each file's serialized FileDescriptorProto as it appears in the set, by file name. */
  private readonly bytes = new Map<string, Uint8Array>();
  private readonly dependencies = new Map<string, readonly string[]>();
  /** Fully-qualified name (no leading dot) of every message, field, oneof, enum, enum value, service, method and extension → its file. */
  private readonly symbols = new Map<string, string>();
  /** Extended message → extension field number → the file that declares the extension. */
  private readonly extensions = new Map<string, Map<number, string>>();
  private readonly messages = new Set<string>();
  /** Described service → its method names. */
  readonly services = new Map<string, readonly string[]>();
  /** Method path ("/pkg.Service/Method") → its request message, fully qualified. */
  readonly requestTypes = new Map<string, string>();

  constructor(descriptorSet: Uint8Array) {
    // The set is split on the wire so that each file keeps protoc's bytes; only the index is decoded.
    const reader = new BinaryReader(descriptorSet);
    while (reader.pos < reader.len) {
      const [field, wireType] = reader.tag();
      if (field !== FILE_DESCRIPTOR_SET_FILE_FIELD || wireType !== WireType.LengthDelimited) {
        reader.skip(wireType);
        continue;
      }
      const bytes = reader.bytes();
      const file = fromBinary(FileDescriptorProtoSchema, bytes);
      if (this.bytes.has(file.name)) throw new Error(`descriptor set: ${file.name} appears twice`);
      this.bytes.set(file.name, bytes);
      this.dependencies.set(file.name, file.dependency);
      this.indexFile(file);
    }
    for (const [name, deps] of this.dependencies) {
      const missing = deps.filter((d) => !this.bytes.has(d));
      if (missing.length > 0) throw new Error(`descriptor set: ${name} imports ${missing.join(", ")}, which the set lacks (protoc --include_imports)`);
    }
  }

  /** The file and everything it imports, transitively, the file itself first; undefined when unknown. */
  fileWithDependencies(name: string): Uint8Array[] | undefined {
    if (!this.bytes.has(name)) return undefined;
    const order: string[] = [];
    const visit = (n: string) => {
      if (order.includes(n)) return;
      order.push(n);
      for (const d of this.dependencies.get(n) ?? []) visit(d);
    };
    visit(name);
    return order.map((n) => this.bytes.get(n)!);
  }

  fileOfSymbol(symbol: string): string | undefined {
    return this.symbols.get(symbol);
  }

  fileOfExtension(extendee: string, fieldNumber: number): string | undefined {
    return this.extensions.get(extendee)?.get(fieldNumber);
  }

  /** The extension numbers of a described message (sorted), undefined when the message is unknown. */
  extensionNumbers(message: string): number[] | undefined {
    if (!this.messages.has(message)) return undefined;
    return [...(this.extensions.get(message)?.keys() ?? [])].sort((a, b) => a - b);
  }

  private indexFile(file: FileDescriptorProto): void {
    const add = (symbol: string) => this.symbols.set(symbol, file.name);
    const scoped = (scope: string, name: string) => (scope ? `${scope}.${name}` : name);
    const enums = (scope: string, list: EnumDescriptorProto[]) => {
      for (const e of list) {
        add(scoped(scope, e.name));
        // protobuf scopes enum values beside their enum, not inside it (C++ scoping rules)
        for (const v of e.value) add(scoped(scope, v.name));
      }
    };
    const extensions = (scope: string, list: FieldDescriptorProto[]) => {
      for (const x of list) {
        add(scoped(scope, x.name));
        // protoc writes resolved type names fully qualified, with a leading dot
        const extendee = x.extendee.replace(/^\./, "");
        let numbers = this.extensions.get(extendee);
        if (!numbers) this.extensions.set(extendee, (numbers = new Map()));
        numbers.set(x.number, file.name);
      }
    };
    const messages = (scope: string, list: DescriptorProto[]) => {
      for (const m of list) {
        const name = scoped(scope, m.name);
        add(name);
        this.messages.add(name);
        for (const f of m.field) add(`${name}.${f.name}`);
        for (const o of m.oneofDecl) add(`${name}.${o.name}`);
        messages(name, m.nestedType);
        enums(name, m.enumType);
        extensions(name, m.extension);
      }
    };
    messages(file.package, file.messageType);
    enums(file.package, file.enumType);
    extensions(file.package, file.extension);
    for (const s of file.service) {
      const name = scoped(file.package, s.name);
      add(name);
      for (const m of s.method) {
        add(`${name}.${m.name}`);
        this.requestTypes.set(`/${name}/${m.name}`, m.inputType.replace(/^\./, ""));
      }
      this.services.set(name, s.method.map((m) => m.name));
    }
  }
}

type MessageResponse = NonNullable<ServerReflectionResponse["messageResponse"]>;

const notFound = (message: string): MessageResponse => ({ $case: "errorResponse", errorResponse: { errorCode: grpc.status.NOT_FOUND, errorMessage: message } });

const files = (found: Uint8Array[]): MessageResponse => ({
  $case: "fileDescriptorResponse",
  fileDescriptorResponse: { fileDescriptorProto: found.map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength)) },
});

/** The answer to one request of a ServerReflectionInfo stream. */
function answerReflection(index: DescriptorIndex, listed: readonly string[], request: ServerReflectionRequest): ServerReflectionResponse {
  const ask = request.messageRequest;
  const fileOf = (name: string | undefined, what: string) => {
    const found = name === undefined ? undefined : index.fileWithDependencies(name);
    return found ? files(found) : notFound(`${what} not found`);
  };
  let messageResponse: MessageResponse;
  switch (ask?.$case) {
    case "listServices":
      // the request's text is unspecified ("*" by convention): every service is listed
      messageResponse = { $case: "listServicesResponse", listServicesResponse: { service: listed.map((name) => ({ name })) } };
      break;
    case "fileByFilename":
      messageResponse = fileOf(ask.fileByFilename, `file ${ask.fileByFilename}`);
      break;
    case "fileContainingSymbol":
      messageResponse = fileOf(index.fileOfSymbol(ask.fileContainingSymbol.replace(/^\./, "")), `symbol ${ask.fileContainingSymbol}`);
      break;
    case "fileContainingExtension": {
      const { containingType, extensionNumber } = ask.fileContainingExtension;
      messageResponse = fileOf(index.fileOfExtension(containingType, extensionNumber), `extension ${extensionNumber} of ${containingType}`);
      break;
    }
    case "allExtensionNumbersOfType": {
      const type = ask.allExtensionNumbersOfType;
      const numbers = index.extensionNumbers(type);
      messageResponse = numbers
        ? { $case: "allExtensionNumbersResponse", allExtensionNumbersResponse: { baseTypeName: type, extensionNumber: numbers } }
        : notFound(`message type ${type} not found`);
      break;
    }
    case undefined:
      messageResponse = { $case: "errorResponse", errorResponse: { errorCode: grpc.status.INVALID_ARGUMENT, errorMessage: "the request sets no message_request" } };
      break;
  }
  return { validHost: request.host, originalRequest: request, messageResponse };
}

/**
 * A grpc-js server that knows which method paths ("/pkg.Service/Method") it serves. grpc-js keeps
 * them in a private map with no accessor; every service it is given (addService, a library's
 * addToServer such as grpc-health-check's) goes through its public register()/unregister(), so
 * the paths are recorded there, without reading grpc-js's internals.
 */
export class ReflectedServer extends grpc.Server {
  private readonly paths = new Set<string>();

  override register<RequestType, ResponseType>(
    name: string, handler: HandleCall<RequestType, ResponseType>, serialize: grpc.serialize<ResponseType>, deserialize: grpc.deserialize<RequestType>, type: string,
  ): boolean {
    const added = super.register(name, handler, serialize, deserialize, type);
    if (added) this.paths.add(name);
    return added;
  }

  override unregister(name: string): boolean {
    const removed = super.unregister(name);
    if (removed) this.paths.delete(name);
    return removed;
  }

  /** The method paths registered now, in registration order. */
  registeredPaths(): string[] {
    return [...this.paths];
  }
}

let served: DescriptorIndex | undefined;

/** The index of the descriptor set the build embedded, read once per process. */
function servedIndex(): DescriptorIndex {
  served ??= new DescriptorIndex(Buffer.from(SERVED_DESCRIPTOR_SET_BASE64, "base64"));
  return served;
}

/** The fully-qualified request message of a method path, from the served descriptors; undefined when unknown. */
export function requestTypeOf(path: string): string | undefined {
  return servedIndex().requestTypes.get(path);
}

/**
 * Registers grpc.reflection.v1 and v1alpha on `server`, to be called once every other service has
 * been added. Throws when a registered service is not in the descriptor set, or a described one is
 * not registered: the build (scripts/proto-gen.sh) and the server disagree.
 */
export function serveReflection(server: ReflectedServer): void {
  const index = servedIndex();
  const listed: string[] = [];
  const info: grpc.handleBidiStreamingCall<ServerReflectionRequest, ServerReflectionResponse> = (call) => {
    call.on("data", (request: ServerReflectionRequest) => call.write(answerReflection(index, listed, request)));
    call.on("end", () => call.end());
  };
  server.addService(ReflectionV1Service, { serverReflectionInfo: info });
  server.addService(ReflectionV1AlphaService, { serverReflectionInfo: info });

  const registered = new Map<string, Set<string>>();
  for (const path of server.registeredPaths()) {
    const [, service, method] = /^\/([^/]+)\/([^/]+)$/.exec(path) ?? [];
    if (!service || !method) continue;
    if (!registered.has(service)) registered.set(service, new Set());
    registered.get(service)!.add(method);
  }
  const problems: string[] = [];
  for (const [service, methods] of registered) {
    const described = index.services.get(service);
    if (!described) problems.push(`${service} is registered but not described`);
    else for (const m of methods) if (!described.includes(m)) problems.push(`${service}/${m} is registered but not described`);
  }
  for (const [service, methods] of index.services) {
    for (const m of methods) if (!registered.get(service)?.has(m)) problems.push(`${service}/${m} is described but not registered`);
  }
  if (problems.length > 0) throw new Error(`server reflection: the descriptor set and the server disagree: ${problems.join("; ")}`);
  listed.push(...[...registered.keys()].sort());
}
