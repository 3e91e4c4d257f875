// The package build (`npm run build`, and `prepare`, so that npm ci, npm pack and an
// install from git all get it): tsc compiles the sources to dist/ as ESM with declarations,
// then the files the compiled code reads at run time are copied beside it.
import { chmodSync, cpSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(fileURLToPath(import.meta.url));
const dist = join(root, "dist");
const at = (...parts) => join(root, ...parts);

rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
try {
  execFileSync(process.execPath, [tsc, "-p", at("tsconfig.build.json")], { cwd: root, stdio: "inherit" });
} catch {
  console.error("turnspec build: tsc reported errors (above); dist/ was not written");
  process.exit(1);
}

const copy = (from, to = from) => cpSync(at(from), join(dist, to), { recursive: true });
// Read at run time, relative to the compiled modules.
copy("generator/templates");
copy("schemas");
for (const name of readdirSync(at("conformance"))) if (name.endsWith(".json")) copy(`conformance/${name}`);
copy("conformance/schemas");
copy("generator/diff/report.schema.json");
copy("generated/openrpc.json");
copy("generated/PROTOCOL.md");
// The support module's TypeScript sources, which `turnspec generate --standalone` writes beside its output.
mkdirSync(join(dist, "support"), { recursive: true });
for (const name of readdirSync(at("rpc"))) if (name.endsWith(".ts")) copy(`rpc/${name}`, `support/${name}`);
// The inspector's page, bundled with vite by the compiled bundler itself, so that the package
// build and a run from the sources bundle it the same way; `turnspec inspect` serves it from here.
try {
  const { bundleInspectorPage } = await import("./dist/client/inspector/bundle.js");
  await bundleInspectorPage({ root, outDir: join(dist, "client/inspector/assets") });
} catch (error) {
  console.error(`turnspec build: the inspector page could not be bundled: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
chmodSync(join(dist, "bin/cli.js"), 0o755);
