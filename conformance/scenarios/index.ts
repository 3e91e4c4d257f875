/** Every scenario of the suite, in the order they are started. */
import type { Scenario } from "../scenario.js";
import { coreScenarios } from "./core.js";

export const scenarios: readonly Scenario[] = [...coreScenarios];
