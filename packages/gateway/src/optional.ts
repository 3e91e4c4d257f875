/**
 * The gateway's optional dependencies: each store's driver and each backend's SDK is a peer
 * dependency of @turnspec/gateway, loaded only when the configuration uses it. A missing one
 * is a configuration problem, said in words that name the package and how to install it.
 */
import { createRequire } from "node:module";

const requireHere = createRequire(import.meta.url);
const { peerDependencies } = requireHere("../package.json") as { peerDependencies: Record<string, string> };

/** The optional packages, with what needs each. */
export type OptionalPackage = "better-sqlite3" | "pg" | "openai" | "@modelcontextprotocol/sdk" | "@agentclientprotocol/sdk";

export class MissingPackageError extends Error {
  override readonly name = "MissingPackageError";
  constructor(
    readonly packageName: OptionalPackage,
    what: string,
  ) {
    super(
      `${what} needs the npm package ${packageName}, which is not installed: run npm install ${packageName}@"${peerDependencies[packageName] ?? "*"}"`,
    );
  }
}

const isMissing = (error: unknown, name: string) => {
  const code = (error as { code?: string }).code;
  return (code === "MODULE_NOT_FOUND" || code === "ERR_MODULE_NOT_FOUND") && String((error as Error).message).includes(name);
};

/** Requires an optional CommonJS package; `what` names what needs it ("the SQLite store"). */
export function requireOptional<T>(name: OptionalPackage, what: string): T {
  try {
    return requireHere(name) as T;
  } catch (error) {
    if (isMissing(error, name)) throw new MissingPackageError(name, what);
    throw error;
  }
}

/** Where an optional package's entry is, for a worker thread to load the same module. */
export function resolveOptional(name: OptionalPackage, what: string): string {
  try {
    return requireHere.resolve(name);
  } catch (error) {
    if (isMissing(error, name)) throw new MissingPackageError(name, what);
    throw error;
  }
}

/** Imports a module of an optional package (`specifier` may be a subpath of `name`). */
export async function importOptional<T>(name: OptionalPackage, specifier: string, what: string): Promise<T> {
  try {
    return (await import(specifier)) as T;
  } catch (error) {
    if (isMissing(error, name)) throw new MissingPackageError(name, what);
    throw error;
  }
}
