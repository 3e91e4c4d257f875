// `node --import ./scripts/from-source.mjs file.ts`: runs a TypeScript file of the
// repository with the workspace packages resolved to their sources.
import { register } from "node:module";
import { register as registerTsx } from "tsx/esm/api";

registerTsx();
register("./source-condition.mjs", import.meta.url);
