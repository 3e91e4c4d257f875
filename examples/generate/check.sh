# What CI runs on every change to the schemas: fail when generated/ is stale or does not type-check,
# or when the sample transcript no longer matches the schemas.
npx turnspec generate --check --typecheck
npx turnspec validate examples/session.jsonl
