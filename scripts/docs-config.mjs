#!/usr/bin/env node
// `npm run docs:config`: writes docs/config-reference.md from the settings schema (server/settings).
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { renderReference } = await import(path.join(root, "dist", "server", "settings", "index.js"));
writeFileSync(path.join(root, "docs", "config-reference.md"), renderReference());
console.error("wrote docs/config-reference.md");
