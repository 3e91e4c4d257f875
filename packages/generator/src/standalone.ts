/**
 * `turnspec generate --standalone`: the JSON-RPC support module the generated code
 * imports (@turnspec/rpc, dependency-free) written beside the output as TypeScript, so a
 * team can ship its generated code without depending on turnspec at all.
 */
import { existsSync, readFileSync } from "node:fs";
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
  throw new Error(
    `turnspec generate --standalone: the support module's sources are missing (expected ${dir}index.ts); reinstall @turnspec/rpc`,
  );
}

/** The folder of the installed @turnspec/rpc package. */
export function rpcPackageDir(): string {
  return dirname(createRequire(import.meta.url).resolve("@turnspec/rpc/package.json"));
}

/**
 * The files the support module's index.ts reaches through its relative imports, by name: what
 * the generated code runs on, and nothing the package offers beside it (reading files from
 * disk, the test harness), which may need Node.
 */
function reachedFromIndex(dir: string): string[] {
  const reached = new Set<string>();
  const visit = (name: string) => {
    if (reached.has(name)) return;
    reached.add(name);
    const source = readFileSync(`${dir}${name}`, "utf8");
    for (const match of source.matchAll(/(?:from|import\()\s*"\.\/([\w.-]+)\.js"/g)) {
      const next = `${match[1]}.ts`;
      if (!existsSync(`${dir}${next}`))
        throw new Error(
          `turnspec generate --standalone: ${name} of the support module imports ./${match[1]}.js, which is not among its sources in ${dir}`,
        );
      visit(next);
    }
  };
  visit("index.ts");
  return [...reached];
}

/** The support module's files, each headed as generated, at `support/<name>.ts` of the output. */
export function standaloneSupportFiles(header: string): GeneratedFile[] {
  const dir = supportSourceDir();
  return reachedFromIndex(dir)
    .sort()
    .map((name) => ({
      path: `${STANDALONE_DIR}/${name}`,
      content: `${header}\n// turnspec's JSON-RPC support module, copied here by --standalone: the generated code beside it needs nothing else.\n${readFileSync(`${dir}${name}`, "utf8")}`,
    }));
}
