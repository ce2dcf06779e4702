/** Contract samples of `qimctl demo` (test/cli/result-samples.ts). */
import type Demo from "../../../cli/commands/demo.js";
import { freeForm, samplesOf, type ResultOf } from "../result-samples.js";

export const samples = {
  demo: samplesOf<ResultOf<typeof Demo>>(
    {
      ok: true,
      failedStep: null,
      endpoint: "localhost:37879",
      dataDir: "/home/alice/qim/.qim/demo",
      authority: "redis-hash (development fallback, not an authority guarantee; keys qim:{uNNN}:ucs:*)",
      tenant: "3ccd4e08-5b1a-4c2d-9e3f-4a5b6c7d8e9f",
      users: { alice: "999e1194-0a1b-4c2d-8e3f-4a5b6c7d8e9f", bob: "8c677089-1b2c-4d3e-9f40-5b6c7d8e9fa0", carol: "254eb0e6-2c3d-4e4f-8a51-6c7d8e9fa0b1", dave: "b14678ee-3d4e-4f50-9b62-7d8e9fa0b1c2" },
      groups: { team: "f95e2fe6-4e5f-4061-8c73-8e9fa0b1c2d3", side: "6461cf92-5f60-4172-9d84-9fa0b1c2d3e4" },
      steps: [{ name: "add-member", ok: true, status: "ok", details: freeForm({ change: { op: "join", eventConversationSeq: 4 } }), error: null }],
      stackRunning: true,
    },
    {
      ok: false,
      failedStep: "dev-up",
      endpoint: null,
      dataDir: "/home/alice/qim/.qim/demo",
      authority: null,
      tenant: null,
      users: null,
      groups: null,
      steps: [{ name: "dev-up", ok: false, status: "failed", details: freeForm({}), error: "redis-server exited during start-up" }],
      stackRunning: false,
    },
  ),
};
