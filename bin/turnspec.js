#!/usr/bin/env node
// The `turnspec` command in a checkout of the repository: runs the TypeScript sources
// through tsx, with the workspace packages resolved to their sources (the exports'
// "turnspec-source" condition). The published command is packages/turnspec/dist/cli.js.
import { register } from "node:module";
import { register as registerTsx } from "tsx/esm/api";

registerTsx();
// Registered last, so it runs first: every import asks for the sources' condition.
register("../scripts/source-condition.mjs", import.meta.url);
await import("../packages/turnspec/src/cli.ts");
