/**
 * `--typecheck` compiles the output with ts-morph, an optional peer dependency of the
 * generator: loaded only when a type check is asked for, and named when it is missing.
 */
export async function loadTypeCheck(): Promise<typeof import("./typecheck.js")> {
  try {
    return await import("./typecheck.js");
  } catch (error) {
    if ((error as { code?: string }).code === "ERR_MODULE_NOT_FOUND" && String((error as Error).message).includes("'ts-morph'")) {
      throw new Error('--typecheck needs the npm package ts-morph, which is not installed: run npm install --save-dev ts-morph@"28"', {
        cause: error,
      });
    }
    throw error;
  }
}
