/**
 * The testee of a generated TypeScript output: `node --import ./scripts/from-source.mjs
 * test/languages/typescript/testee.ts <output folder>` answers the contract harness's commands
 * on stdin with that output's validators and ordering rules (its view.ts), through the
 * support module's serveTestee.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { ProtocolView } from "@turnspec/rpc";
import { serveTestee } from "@turnspec/rpc/testee";

const folder = process.argv[2];
if (folder === undefined) {
  console.error("usage: testee.ts <generated output folder>");
  process.exit(2);
}
const { protocolView } = (await import(pathToFileURL(resolve(folder, "view.ts")).href)) as { protocolView: ProtocolView };
await serveTestee(protocolView);
