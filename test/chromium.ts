/**
 * Where the browser tests find Chromium, and what happens when it is missing: on a
 * developer's machine the browser tests are skipped with one line saying how to enable
 * them; with CI=true a missing Chromium fails the run, so that CI never passes by skipping.
 */
import { existsSync } from "node:fs";

/** The Chromium binary: $CHROMIUM_PATH, else Debian's. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/**
 * Undefined when Chromium is there; otherwise why the named browser test is skipped
 * (after printing it once). Throws instead when CI=true.
 */
export function chromiumMissing(test: string): string | undefined {
  if (existsSync(CHROMIUM_PATH)) return undefined;
  const reason = `${CHROMIUM_PATH} is not installed`;
  if (process.env.CI === "true") {
    throw new Error(
      `${test}: ${reason}, and CI=true does not let browser tests be skipped; install Chromium (apt-get install chromium) or set CHROMIUM_PATH`,
    );
  }
  console.warn(
    `${test} skipped: ${reason}; to run it, install Chromium (apt-get install chromium) or set CHROMIUM_PATH to a Chromium binary`,
  );
  return reason;
}
