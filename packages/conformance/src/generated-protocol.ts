/** This package's own protocol as a `ProtocolView`, over its generated registry, validators and ordering rules. */
import type { ProtocolView } from "../rpc/protocol-view.js";
import { createOrderingChecker } from "../generated/ordering.js";
import { errors, methods, notifications, protocol } from "../generated/registry.js";
import { isTypeName, schemaFiles, validate } from "../generated/validators.js";

export const generatedProtocol: ProtocolView = {
  title: protocol.title,
  methods,
  notifications,
  errors,
  typeNames: Object.keys(schemaFiles),
  validate: (type, value, mode) => {
    if (!isTypeName(type)) throw new Error(`"${type}" is not a type of ${protocol.title}`);
    return validate(type, value, mode);
  },
  createOrderingChecker,
};
