#!/usr/bin/env node
// qim-admin-server: the standalone admin API daemon (commander), compiled to dist/admin-api/main.js.
import "../dist/admin-api/main.js";
