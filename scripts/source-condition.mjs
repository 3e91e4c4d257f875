// A module resolution hook for running the repository from its TypeScript sources: every
// import resolves with the "turnspec-source" condition, which the workspace packages'
// exports map to their src/ files. Used by bin/turnspec.js and `node --import`.
export async function resolve(specifier, context, next) {
  return next(specifier, { ...context, conditions: [...context.conditions, "turnspec-source"] });
}
