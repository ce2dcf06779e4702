/** Contract samples of `version` (test/cli/result-samples.ts). */
import type Version from "../../../cli/commands/version.js";
import { samplesOf, type ResultOf } from "../result-samples.js";

const client = { version: "0.1.0", node: "v20.19.2", platform: "linux-x64" };

export const samples = {
  version: samplesOf<ResultOf<typeof Version>>(
    { client, server: { endpoint: "localhost:7443", version: "0.1.0", node: "v20.19.2", nodeId: "node-1", startedAt: "2026-12-02T08:41:07.352Z" } },
    { client, server: { endpoint: "localhost:7443", version: "0.1.0", node: "v20.19.2", nodeId: null, startedAt: "2026-12-02T08:41:07.352Z" } },
    { client, server: null },
  ),
};
