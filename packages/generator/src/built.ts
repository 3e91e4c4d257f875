/**
 * What the build writes beside the compiled modules (the precompiled meta validators and
 * templates), and the versions of the packages it was written with, which a run checks
 * before it uses any of it.
 */
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/** The version of an installed package, or "(not installed)". */
export function packageVersion(name: string): string {
  try {
    return (require(`${name}/package.json`) as { version: string }).version;
  } catch {
    return "(not installed)";
  }
}

/**
 * A CommonJS module the build wrote beside the compiled modules, by file name; undefined
 * where there is none (the sources run as they are). Any other failure to load it is thrown.
 */
export function builtModule<T>(file: string): T | undefined {
  try {
    return require(`./${file}`) as T;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "MODULE_NOT_FOUND" || !(error as Error).message.includes(file)) throw error;
    return undefined;
  }
}
