#!/usr/bin/env -S node --max-semi-space-size=32
// qim-admin-server: the former name of qim-node (bin/qim-node.js), the same program: a node of the
// QIM engine, compiled to dist/server/main.js.
// The first line gives node the server's young generation (server/node-flags.ts, SERVER_NODE_FLAGS;
// test/admin-api/node-flags.test.ts holds the two equal). `node bin/qim-admin-server.js` skips that
// line: pass the flag yourself then, as the dev stack does.
import "../dist/server/main.js";
