/** Every scenario of the suite, in the order they are started. */
import type { Scenario } from "../scenario.js";
import { backendScenarios } from "./backends.js";
import { coreScenarios } from "./core.js";
import { permissionScenarios } from "./permissions.js";
import { questionScenarios } from "./questions.js";
import { routeScenarios } from "./routes.js";
import { surfacedScenarios } from "./surfaced.js";
import { recoveryScenarios, windowScenarios } from "./windows.js";
import { workScenarios } from "./work.js";

export const scenarios: readonly Scenario[] = [
  ...coreScenarios,
  ...backendScenarios,
  ...permissionScenarios,
  ...routeScenarios,
  ...workScenarios,
  ...windowScenarios,
  ...recoveryScenarios,
  ...questionScenarios,
  ...surfacedScenarios,
];
