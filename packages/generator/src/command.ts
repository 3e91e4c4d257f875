/** `turnspec generate`: runs the generator and reports, returning the exit code. */
import { statSync, watch as watchFolder } from "node:fs";
import { relative, resolve } from "node:path";
import { ConfigError, loadConfig, type Language, type OutputKind } from "./config.js";
import type { GeneratedFile, GenerateOptions } from "./generate.js";
import { SchemaErrors } from "./schema-error.js";
import { cacheDirFor, CacheDirError, cacheKey, readCache, writeCache } from "./cache.js";
// The generator itself (generate.js and what it loads) is imported only when the cache has no answer.

/** The command's flags: each one given overrides turnspec.config.json, which overrides the defaults. */
export interface GenerateCommand {
  /** The schemas folder. Default: the config's, else "schemas". */
  readonly schemasDir?: string;
  /** The output folder. Default: the config's, else "generated". */
  readonly outDir?: string;
  readonly check: boolean;
  readonly typecheck: boolean;
  /** Import specifier of the support module. Default: the config's, else @turnspec/rpc. */
  readonly support?: string;
  /** Write the support module beside the output and import it from there. */
  readonly standalone?: boolean;
  /** Which outputs to emit. Default: the config's, else all. */
  readonly outputs?: readonly OutputKind[];
  /** The config file; default turnspec.config.json in the working folder, when there is one. */
  readonly configFile?: string;
  /** Generate again whenever a file of the schemas folder changes, until interrupted. */
  readonly watch?: boolean;
  /** The language of the output. Default: the config's, else typescript. */
  readonly lang?: Language;
  /** The crate name of a Rust output. Default: the config's, else the protocol's title in snake case. */
  readonly crateName?: string;
  /** The module path of a Go output. Default: the config's, else the protocol's title as one word. */
  readonly goModule?: string;
  /**
   * Reuse the output of an earlier run with the same schemas, generator and options (default
   * true). The cache folder: `cacheDir`, else $TURNSPEC_CACHE_DIR, else node_modules/.cache/turnspec
   * (see cache.ts).
   */
  readonly cache?: boolean;
  readonly cacheDir?: string;
}

interface Settings {
  readonly schemasDir: string;
  readonly outDir: string;
  readonly support: string | undefined;
  readonly standalone: boolean;
  readonly outputs: readonly OutputKind[] | undefined;
  readonly lang: Language;
  readonly crateName: string | undefined;
  readonly goModule: string | undefined;
}

export function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function settingsOf(command: GenerateCommand): Settings {
  const { config } = loadConfig(command.configFile);
  return {
    schemasDir: command.schemasDir ?? config.schemas ?? resolve("schemas"),
    outDir: command.outDir ?? config.out ?? resolve("generated"),
    support: command.support ?? config.support,
    standalone: command.standalone ?? config.standalone ?? false,
    outputs: command.outputs ?? config.outputs,
    lang: command.lang ?? config.lang ?? "typescript",
    crateName: command.crateName ?? config.crateName,
    goModule: command.goModule ?? config.goModule,
  };
}

export async function runGenerate(
  command: GenerateCommand,
  out: { write(text: string): unknown } = process.stdout,
  err: { write(text: string): unknown } = process.stderr,
): Promise<number> {
  let settings: Settings;
  try {
    settings = settingsOf(command);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    err.write(`turnspec generate: ${error.message}\n`);
    return 2;
  }
  if (!isDirectory(settings.schemasDir)) {
    err.write(`turnspec generate: no schemas folder at ${settings.schemasDir}\n`);
    return 2;
  }
  // The TypeScript output's options have no meaning for a Python package or a Rust crate: refused, not ignored.
  const packageKind =
    settings.lang === "python" ? "a Python package (--lang python)" : settings.lang === "rust" ? "a Rust crate (--lang rust)" : undefined;
  if (packageKind !== undefined) {
    const given = [
      settings.support !== undefined && "support",
      settings.standalone && "standalone",
      settings.outputs !== undefined && "outputs",
    ].filter(Boolean);
    if (given.length) {
      err.write(
        `turnspec generate: ${given.join(", ")} ${given.length === 1 ? "is an option" : "are options"} of the TypeScript output; ${packageKind} takes none\n`,
      );
      return 2;
    }
  }
  if (settings.lang !== "rust" && settings.crateName !== undefined) {
    err.write("turnspec generate: crateName is an option of the Rust output; give --lang rust with it\n");
    return 2;
  }
  if (settings.lang === "go" && (settings.support !== undefined || settings.standalone)) {
    err.write(
      `turnspec generate: ${settings.support !== undefined ? "support" : "standalone"} is an option of the TypeScript output; a Go module (--lang go) does not take it\n`,
    );
    return 2;
  }
  if (settings.lang !== "go" && settings.goModule !== undefined) {
    err.write("turnspec generate: goModule is an option of the Go output; give --lang go with it\n");
    return 2;
  }
  if (!command.watch) return generateOnce(command, settings, out, err);
  if (command.check) {
    err.write("turnspec generate: --watch writes the output; it cannot be combined with --check\n");
    return 2;
  }
  return watchAndGenerate(command, settings, out, err);
}

async function generateOnce(
  command: GenerateCommand,
  settings: Settings,
  out: { write(text: string): unknown },
  err: { write(text: string): unknown },
): Promise<number> {
  const started = performance.now();
  const options: GenerateOptions = {
    schemasDir: settings.schemasDir,
    ...(settings.lang === "typescript" ? {} : { lang: settings.lang }),
    ...(settings.crateName === undefined ? {} : { crateName: settings.crateName }),
    ...(settings.goModule === undefined ? {} : { goModule: settings.goModule }),
    ...(settings.support === undefined ? {} : { support: settings.support }),
    ...(settings.outputs === undefined ? {} : { outputs: settings.outputs }),
    ...(settings.standalone ? { standalone: true } : {}),
  };
  let cache: { dir: string; key: string } | undefined;
  if (command.cache ?? true) {
    try {
      cache = { dir: cacheDirFor(settings.schemasDir, settings.outDir, command.cacheDir), key: cacheKey(options) };
    } catch (error) {
      if (!(error instanceof CacheDirError)) throw error;
      err.write(`turnspec generate: ${error.message}\n`);
      return 2;
    }
  }
  let files: GeneratedFile[] | undefined = cache && readCache(cache.dir, cache.key);
  if (files === undefined) {
    const { generateFiles, OptionError } = await import("./generate.js");
    try {
      files = await generateFiles(options);
    } catch (error) {
      if (error instanceof SchemaErrors) {
        err.write(`turnspec generate: the schemas in ${settings.schemasDir} have mistakes; nothing was written.\n${error.message}\n`);
        return 1;
      }
      if (error instanceof (await import("./emit/python/checks.js")).UnsupportedForPython) {
        err.write(`turnspec generate --lang python: ${error.message}; nothing was written.\n`);
        return 1;
      }
      if (error instanceof (await import("./emit/rust/names.js")).UnsupportedForRust) {
        err.write(`turnspec generate --lang rust: ${error.message}; nothing was written.\n`);
        return 1;
      }
      if (error instanceof OptionError) {
        err.write(`turnspec generate: ${error.message}\n`);
        return 2;
      }
      throw error;
    }
    if (cache) {
      try {
        writeCache(cache.dir, cache.key, files);
      } catch (error) {
        err.write(
          `turnspec generate: could not keep the output in the cache folder ${cache.dir} (${(error as Error).message}); the next run generates it again\n`,
        );
      }
    }
  }
  const { compareWithDisk, writeToDisk } = await import("./generate.js");
  const outName = relative(process.cwd(), settings.outDir) || ".";
  if (command.typecheck && settings.lang !== "typescript") {
    const how = {
      go: "a Go module with go build and go vet",
      rust: "a Rust crate with cargo clippy",
      python: "a Python package with pyright --strict or mypy --strict",
    }[settings.lang];
    err.write(`turnspec generate: --typecheck compiles TypeScript output; check ${how}\n`);
    return 2;
  }
  if (command.typecheck) {
    // The compiler is loaded only when asked for.
    let typeCheck: Awaited<ReturnType<typeof import("./load-typecheck.js").loadTypeCheck>>["typeCheck"];
    try {
      ({ typeCheck } = await (await import("./load-typecheck.js")).loadTypeCheck());
    } catch (error) {
      err.write(`turnspec generate: ${(error as Error).message}\n`);
      return 2;
    }
    const diagnostics = typeCheck(files, { outDir: settings.outDir });
    if (diagnostics.length) {
      err.write(`turnspec generate: the generated code does not compile:\n${diagnostics.map((d) => `  ${d}`).join("\n")}\n`);
      return 1;
    }
  }
  if (command.check) {
    const stale = compareWithDisk(files, settings.outDir);
    if (stale.length) {
      err.write(`turnspec generate --check: ${outName}/ is stale (${stale.length} file${stale.length === 1 ? "" : "s"}):\n`);
      for (const file of stale) err.write(`  ${outName}/${file.path}: ${file.problem}\n`);
      err.write(
        `Run "turnspec generate --schemas ${relative(process.cwd(), settings.schemasDir) || "."} --out ${outName}" and commit the result.\n`,
      );
      return 1;
    }
    out.write(`${outName}/ is up to date (${files.length} files).\n`);
    return 0;
  }
  const written = writeToDisk(files, settings.outDir);
  const ms = Math.round(performance.now() - started);
  out.write(
    written.length
      ? `wrote ${written.map((p) => `${outName}/${p}`).join(", ")} in ${ms} ms\n`
      : `${outName}/ was already up to date (${files.length} files, ${ms} ms)\n`,
  );
  return 0;
}

/**
 * Generates, then again after each change to the schemas folder (changes within 100 ms
 * are taken together). Schema mistakes are reported and the watch goes on; the output is
 * left as it was until the schemas load again. Ends on SIGINT or SIGTERM with exit 0.
 */
function watchAndGenerate(
  command: GenerateCommand,
  settings: Settings,
  out: { write(text: string): unknown },
  err: { write(text: string): unknown },
): Promise<number> {
  return new Promise((resolveExit) => {
    let timer: NodeJS.Timeout | undefined;
    let running: Promise<unknown> = Promise.resolve();
    const run = () => {
      running = running
        .then(() => generateOnce(command, settings, out, err))
        .then(() => out.write(`watching ${relative(process.cwd(), settings.schemasDir) || "."}/ for changes (Ctrl-C to stop)\n`));
    };
    run();
    const watcher = watchFolder(settings.schemasDir, (_event, name) => {
      if (name !== null && !String(name).endsWith(".json")) return;
      clearTimeout(timer);
      timer = setTimeout(run, 100);
    });
    const stop = () => {
      clearTimeout(timer);
      watcher.close();
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      void running.then(() => resolveExit(0));
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}
