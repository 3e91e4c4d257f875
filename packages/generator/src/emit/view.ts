/**
 * view.ts: the protocol as one `ProtocolView` of the support module, over the generated
 * registry, validators and ordering checker: what a checker of messages (a transcript
 * validator, an inspector, a certification harness) needs to know about the protocol.
 */
export function emitView(header: string, support: string, title: string): string {
  return `${header}
/** ${title} as one value: its tables, validation of every named type, and its ordering rules. */
import type { ProtocolView } from "${support}";
import { createOrderingChecker } from "./ordering.js";
import { errors, methods, notifications, protocol } from "./registry.js";
import { isTypeName, schemaFiles, validate } from "./validators.js";

export const protocolView: ProtocolView = {
  title: protocol.title,
  batches: protocol.batches,
  methods,
  notifications,
  errors,
  typeNames: Object.keys(schemaFiles),
  validate: (type, value, mode) => {
    if (!isTypeName(type)) throw new Error(\`"\${type}" is not a type of \${protocol.title}\`);
    return validate(type, value, mode);
  },
  createOrderingChecker,
};
`;
}
