#!/usr/bin/env -S node --max-semi-space-size=32
// qim-node: a node of the QIM engine (the node process: the engine runtime and its listeners —
// admin gRPC, node RPC, the application servers' HTTP API, metrics), compiled to dist/server/main.js.
// qim-admin-server is the same program under its former name (bin/qim-admin-server.js).
// The first line gives node the server's young generation (server/node-flags.ts, SERVER_NODE_FLAGS;
// test/admin-api/node-flags.test.ts holds the two equal). `node bin/qim-node.js` skips that line:
// pass the flag yourself then, as the dev stack does.
import "../dist/server/main.js";
