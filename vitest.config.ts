import { availableParallelism } from "node:os";
import { defaultServerConditions } from "vite";
import { defineConfig } from "vitest/config";

// Inside the repository the workspace packages resolve to their TypeScript sources (their
// exports' "turnspec-source" condition, as tsconfig.json's customConditions says for tsc),
// never to a build that may be stale.
const conditions = ["turnspec-source", ...defaultServerConditions];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: ["turnspec-source"] } },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // What a test polls for (a notification another process sends, a warning after a
    // reconnect) comes within milliseconds on a quiet machine and can take seconds on a
    // loaded one; a poll returns as soon as it holds, so the wide bound costs nothing.
    expect: { poll: { timeout: 10_000 } },
    pool: "forks",
    // One test file per core. Vitest's own default keeps a core for itself, which on a
    // two-core machine runs the files one at a time; most of them spend their time waiting
    // on the processes, servers and browsers they start, and the slow ones are files of
    // their own so that they run beside the others.
    maxWorkers: availableParallelism(),
  },
});
