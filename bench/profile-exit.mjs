// Loaded (--import) into a server the benchmarks profile: SIGTERM ends it with process.exit,
// which writes its CPU profile, where the default action of the signal would lose it.
process.once("SIGTERM", () => process.exit(0));
