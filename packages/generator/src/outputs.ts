/** The outputs `turnspec generate` can emit: the one list the CLI, the config and the generator read. */
export const OUTPUT_KINDS = ["types", "validators", "client", "server", "openrpc", "docs", "ordering"] as const;
export type OutputKind = (typeof OUTPUT_KINDS)[number];

/** The languages `turnspec generate` writes (docs/languages.md). */
export const LANGUAGES = ["typescript", "python", "go", "rust"] as const;
export type Language = (typeof LANGUAGES)[number];
