#!/usr/bin/env -S node --max-semi-space-size=32
// qim-admin-server: the standalone admin API daemon (commander), compiled to dist/server/main.js.
// The first line gives node the server's young generation (admin-api/node-flags.ts, SERVER_NODE_FLAGS;
// test/admin-api/node-flags.test.ts holds the two equal). `node bin/qim-admin-server.js` skips that
// line: pass the flag yourself then, as the dev stack does.
import "../dist/server/main.js";
