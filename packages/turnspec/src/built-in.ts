/**
 * The protocol `turnspec validate` checks when no schemas folder is named: the agent-gateway
 * protocol, as generated into @turnspec/protocol (loaded only when used).
 */
import type { ValidateCommand } from "@turnspec/generator/validate-command";

export const builtInProtocol: NonNullable<ValidateCommand["builtIn"]> = {
  load: async () => (await import("@turnspec/protocol/view")).protocolView,
  typeNamesAt: "the titles listed in the agent-gateway protocol's reference, PROTOCOL.md",
};
