#!/usr/bin/env node
// Entry point of the `turnspec` command: loads TypeScript sources through tsx.
import { register } from "tsx/esm/api";

register();
await import("./cli.ts");
