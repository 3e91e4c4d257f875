/**
 * Bundles the inspector page (src/page/main.ts and its stylesheet) with vite into one
 * folder of static files: at build time into dist/assets/, and by the page's tests. The
 * bundle may not import a Node built-in: the build fails naming the importer. Its imports of
 * the other packages resolve to their sources (the "turnspec-source" condition).
 */
import { copyFileSync, mkdtempSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export interface BundleOptions {
  /** Where the files go. Default: a new temporary folder. */
  readonly outDir?: string;
  /** Minify the script (default true). */
  readonly minify?: boolean;
}

const NODE_BUILTINS = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);

/** Bundles the page; resolves with the folder that holds inspector.js and inspector.css. */
export async function bundleInspectorPage(options: BundleOptions = {}): Promise<string> {
  const root = fileURLToPath(new URL(".", import.meta.url));
  const outDir = options.outDir ?? mkdtempSync(join(tmpdir(), "turnspec-inspector-"));
  // vite is a build-time dependency: loaded only when a bundle is made.
  const { build } = await import("vite");
  await build({
    configFile: false,
    logLevel: "warn",
    root,
    plugins: [
      {
        name: "no-node-builtins",
        enforce: "pre",
        resolveId(id, importer) {
          if (NODE_BUILTINS.has(id) || id.startsWith("node:"))
            throw new Error(`the inspector page imports the Node built-in "${id}" from ${importer ?? "the entry"}`);
          return null;
        },
      },
    ],
    resolve: { conditions: ["turnspec-source", "browser", "module", "import", "default"] },
    build: {
      outDir,
      emptyOutDir: true,
      minify: options.minify ?? true,
      copyPublicDir: false,
      lib: { entry: resolve(root, "src/page/main.ts"), formats: ["es"], fileName: () => "inspector.js" },
    },
  });
  copyFileSync(resolve(root, "src/page/inspector.css"), join(outDir, "inspector.css"));
  return outDir;
}
