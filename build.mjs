// The package build (`npm run build`, and `prepare`, so that npm ci, npm pack and an
// install from git all get it): tsc compiles the sources to dist/ as ESM with declarations,
// then the files the compiled code reads at run time are copied beside it.
//
// The build is made in a folder of its own beside dist/ and takes dist/'s place only once it
// is whole, so that whatever runs the compiled package meanwhile (a command started from
// dist/, a test beside a pack) never finds it half written, and a failed build leaves the
// last good one in place.
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = dirname(fileURLToPath(import.meta.url));
const target = join(root, "dist");
const dist = join(root, `dist.building-${process.pid}`);
const at = (...parts) => join(root, ...parts);
const fail = (message) => {
  rmSync(dist, { recursive: true, force: true });
  console.error(`turnspec build: ${message}`);
  process.exit(1);
};

rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
try {
  execFileSync(process.execPath, [tsc, "-p", at("tsconfig.build.json"), "--outDir", dist], { cwd: root, stdio: "inherit" });
} catch {
  fail("tsc reported errors (above); dist/ was left as it was");
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
  const { bundleInspectorPage } = await import(pathToFileURL(join(dist, "client/inspector/bundle.js")).href);
  await bundleInspectorPage({ root, outDir: join(dist, "client/inspector/assets") });
} catch (error) {
  fail(`the inspector page could not be bundled: ${error instanceof Error ? error.message : String(error)}; dist/ was left as it was`);
}
chmodSync(join(dist, "bin/cli.js"), 0o755);

// The whole build takes dist/'s place: two renames, so dist/ is missing only between them.
const previous = `${target}.previous-${process.pid}`;
if (existsSync(target)) renameSync(target, previous);
renameSync(dist, target);
rmSync(previous, { recursive: true, force: true });
