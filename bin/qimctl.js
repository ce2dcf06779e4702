#!/usr/bin/env node
// qimctl: the oclif CLI compiled to dist/cli (package.json "oclif" section: commands in
// ./dist/cli/commands, topics separated by a space). Run `npm run build` first.
import { execute } from "@oclif/core";

await execute({ dir: import.meta.url });
