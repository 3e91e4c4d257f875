/**
 * `turnspec generate --standalone`: the JSON-RPC support module the generated code
 * imports (@turnspec/rpc, dependency-free) written beside the output as TypeScript, so a
 * team can ship its generated code without depending on turnspec at all.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { GeneratedFile } from "./generate.js";

/** The folder inside the output that holds the support module. */
export const STANDALONE_DIR = "support";

/** The import specifier generated files use for the support module written beside them. */
export const STANDALONE_SUPPORT = `./${STANDALONE_DIR}/index.js`;

/** Where the support module's TypeScript sources are: @turnspec/rpc ships them in its src/. */
function supportSourceDir(): string {
  const dir = join(rpcPackageDir(), "src/");
  if (existsSync(`${dir}index.ts`)) return dir;
  throw new Error(`turnspec generate --standalone: the support module's sources are missing (expected ${dir}index.ts); reinstall @turnspec/rpc`);
}

/** The folder of the installed @turnspec/rpc package. */
export function rpcPackageDir(): string {
  return dirname(createRequire(import.meta.url).resolve("@turnspec/rpc/package.json"));
}

/** The support module's files, each headed as generated, at `support/<name>.ts` of the output. */
export function standaloneSupportFiles(header: string): GeneratedFile[] {
  const dir = supportSourceDir();
  return readdirSync(dir)
    .filter((name) => name.endsWith(".ts") && !name.endsWith(".d.ts"))
    .sort()
    .map((name) => ({
      path: `${STANDALONE_DIR}/${name}`,
      content: `${header}\n// turnspec's JSON-RPC support module, copied here by --standalone: the generated code beside it needs nothing else.\n${readFileSync(`${dir}${name}`, "utf8")}`,
    }));
}
