// The build of every package (`npm run build`, and `prepare`, so that npm ci gets it):
// `tsc -b` compiles each package's src/ to its dist/ as ESM with declarations, in the order
// of their references; then the files the compiled code reads at run time are copied beside
// it, the inspector's page is bundled, and the files every published package carries (the
// licence; the command line's guides) are put in place.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { basename, dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = dirname(fileURLToPath(import.meta.url));
const at = (...parts) => join(root, ...parts);
const fail = (message) => {
  console.error(`turnspec build: ${message}`);
  process.exit(1);
};

const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
try {
  execFileSync(process.execPath, [tsc, "-b", at("tsconfig.build.json")], { cwd: root, stdio: "inherit" });
} catch {
  fail("tsc reported errors (above)");
}

// The precompiled validators are plain JavaScript nobody reads: shipped minified, they are a
// third of the size (what a client installs, and what a browser bundle carries).
const { transform } = await import("esbuild");
for (const set of ["strict", "tolerant", "report"]) {
  const file = at("generated/dist", `validators.${set}.js`);
  const { code } = await transform(readFileSync(file, "utf8"), { minify: true, format: "esm", target: "es2022" });
  writeFileSync(file, code);
}

// The meta-schemas every `turnspec generate` checks a schemas folder against, compiled once
// here rather than on every run (packages/generator/src/meta-precompile.ts).
const { metaValidatorsModule } = await import(pathToFileURL(at("packages/generator/dist/meta-precompile.js")).href);
const { META_VALIDATORS_MODULE } = await import(pathToFileURL(at("packages/generator/dist/meta.js")).href);
writeFileSync(at("packages/generator/dist", META_VALIDATORS_MODULE), metaValidatorsModule());
// And its Handlebars templates, so that a run loads Handlebars' runtime alone (templates-precompile.ts).
const { templatesModule } = await import(pathToFileURL(at("packages/generator/dist/templates-precompile.js")).href);
writeFileSync(at("packages/generator/dist/templates.cjs"), templatesModule());

const copy = (from, to) => cpSync(at(from), at(to), { recursive: true });
// Read at run time, relative to the compiled modules.
const conformance = "packages/conformance";
for (const name of readdirSync(at(conformance, "src")))
  if (name.endsWith(".json")) copy(`${conformance}/src/${name}`, `${conformance}/dist/${name}`);
copy(`${conformance}/src/schemas`, `${conformance}/dist/schemas`);
copy("packages/generator/src/diff/report.schema.json", "packages/generator/dist/diff/report.schema.json");

// The inspector's page, bundled with vite from its sources into the package's dist/assets/.
try {
  const { register } = await import("tsx/esm/api");
  register();
  const { bundleInspectorPage } = await import(pathToFileURL(at("packages/inspect/bundle.ts")).href);
  await bundleInspectorPage({ outDir: at("packages/inspect/dist/assets") });
} catch (error) {
  fail(`the inspector page could not be bundled: ${error instanceof Error ? error.message : String(error)}`);
}

// Every package carries the licence; the command line carries the guides its README links to.
for (const dir of [...readdirSync(at("packages")).map((name) => `packages/${name}`), "generated"]) {
  if (existsSync(at(dir, "package.json"))) copy("LICENSE", `${dir}/LICENSE`);
}
// The guides, with the examples and schemas they show, so that they stand on their own in the installed
// package: links into the other packages' sources lead to what those packages ship beside it.
const SHIPPED_LINKS = [
  ["../generated/", "../../@turnspec/protocol/"],
  ["../packages/conformance/src/", "../../@turnspec/conformance/dist/"],
  ["../packages/generator/src/", "../../@turnspec/generator/dist/"],
  ["../packages/generator/meta/", "../../@turnspec/generator/meta/"],
];
for (const folder of ["docs", "examples", "schemas"]) rmSync(at("packages/turnspec", folder), { recursive: true, force: true });
// Python's bytecode caches, left beside the Python examples by a local run, are not shipped.
cpSync(at("examples"), at("packages/turnspec/examples"), { recursive: true, filter: (source) => basename(source) !== "__pycache__" });
copy("schemas", "packages/turnspec/schemas");
for (const name of readdirSync(at("docs"), { recursive: true })) {
  const from = at("docs", name);
  const to = at("packages/turnspec/docs", name);
  if (!statSync(from).isFile()) continue;
  mkdirSync(dirname(to), { recursive: true });
  if (!name.endsWith(".md")) {
    cpSync(from, to);
    continue;
  }
  const depth = name.split("/").length - 1;
  const up = "../".repeat(depth);
  let text = readFileSync(from, "utf8");
  for (const [repo, shipped] of SHIPPED_LINKS) text = text.replaceAll(`](${up}${repo}`, `](${up}${shipped}`);
  // What exists only in the repository (the docs' own build script) is named, not linked.
  text = text.replace(new RegExp(`\\[([^\\]]+)\\]\\(${up.replaceAll(".", "\\.")}\\.\\./scripts/[^)]*\\)`, "g"), "$1");
  writeFileSync(to, text);
}

// `turnspec --help` alone is answered by the installed bin from this text, without loading the
// command line (packages/turnspec/bin/turnspec.js): the compiled command line's own output for it,
// written by yargs in English at its width of 80 columns.
const help = execFileSync(process.execPath, [at("packages/turnspec/dist/cli.js"), "--help"], {
  cwd: root,
  encoding: "utf8",
  env: { ...process.env, LC_ALL: "C", LANG: "C", LC_MESSAGES: "C" },
});
writeFileSync(at("packages/turnspec/dist/help.txt"), help);
