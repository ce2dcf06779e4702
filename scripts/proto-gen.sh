#!/usr/bin/env bash
# Generates the TypeScript of the admin API from proto/ with ts-proto (pinned in package.json) and
# the protoc binary shipped by the npm package `protoc`. Output: admin-api/gen/ (not committed;
# `npm run build` regenerates it, so it can never be stale).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=admin-api/gen
rm -rf "$out"
mkdir -p "$out"
npx --no-install protoc \
  --plugin=protoc-gen-ts_proto=./node_modules/.bin/protoc-gen-ts_proto \
  --ts_proto_out="$out" \
  --ts_proto_opt=outputServices=grpc-js,esModuleInterop=true,importSuffix=.js,env=node,forceLong=bigint,useOptionals=messages,oneof=unions \
  -I proto proto/qim/admin/v1/*.proto
