#!/usr/bin/env node
// The `turnspec` command in a checkout of the repository: runs the TypeScript sources
// through tsx, with tsconfig.json's paths mapping turnspec/* to them. The published
// package's command is the compiled dist/bin/cli.js.
import { fileURLToPath } from "node:url";
import { register } from "tsx/esm/api";

register({ tsconfig: fileURLToPath(new URL("../tsconfig.json", import.meta.url)) });
await import("./cli.ts");
