// The repository's lint (`npm run lint`, run by .ci/run before the tests). Kept to rules that
// need no type information, so it runs in seconds: the directions between the packages
// (scripts/lint/package-directions.mjs), and ESLint's and typescript-eslint's recommended
// rules over the packages' sources.
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import turnspec from "./scripts/lint/package-directions.mjs";

export default tseslint.config(
  {
    ignores: [
      "**/dist/**",
      "**/node_modules/**",
      // Generated and bulky: the validators are compiled schemas; templates are text for other projects.
      "generated/validators.*.ts",
      "packages/generator/templates/**",
    ],
  },
  {
    files: ["packages/*/src/**/*.ts", "packages/inspect/bundle.ts", "generated/*.ts"],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    plugins: { turnspec },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      "turnspec/package-directions": "error",
      "@typescript-eslint/no-explicit-any": "error",
      // A leading underscore marks what is left out on purpose (`const { $schema: _draft, ...schema }`).
      "@typescript-eslint/no-unused-vars": [
        "error",
        { varsIgnorePattern: "^_", argsIgnorePattern: "^_", caughtErrors: "none", ignoreRestSiblings: true },
      ],
      "@typescript-eslint/no-unused-expressions": ["error", { allowShortCircuit: true }],
      // The JSON escaper and the JUnit writer match control characters on purpose.
      "no-control-regex": "off",
      // An error caught and thrown again is rewritten into a message that names the place and the cause.
      "preserve-caught-error": "off",
    },
  },
);
