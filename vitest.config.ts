import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const source = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  resolve: {
    // Inside the repository the package's own entry points are its TypeScript sources (as
    // tsconfig.json's paths say for tsc and tsx), never a build that may be stale.
    alias: [
      { find: /^turnspec\/rpc$/, replacement: source("./rpc/index.ts") },
      { find: /^turnspec\/transport$/, replacement: source("./transport/index.ts") },
      { find: /^turnspec\/generated$/, replacement: source("./generated/index.ts") },
      { find: /^turnspec\/client\/browser$/, replacement: source("./client/browser.ts") },
      { find: /^turnspec\/client\/ag-ui$/, replacement: source("./client/ag-ui/index.ts") },
      { find: /^turnspec\/client$/, replacement: source("./client/index.ts") },
      { find: /^turnspec\/generator$/, replacement: source("./generator/index.ts") },
    ],
  },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // One test file per core. Vitest's own default keeps a core for itself, which on a
    // two-core machine runs the files one at a time; most of them spend their time waiting
    // on the processes, servers and browsers they start, and the slow ones are files of
    // their own so that they run beside the others.
    maxWorkers: availableParallelism(),
  },
});
