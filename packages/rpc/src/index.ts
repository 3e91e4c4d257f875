/** Shared JSON-RPC support imported by generated clients and servers (both ends), and by the reference gateway. */
export * from "./errors.js";
export * from "./validation.js";
export * from "./validator-helpers.js";
export * from "./transport.js";
export * from "./envelope.js";
export * from "./dispatcher.js";
export * from "./client.js";
export * from "./outgoing.js";
export * from "./ordering.js";
export * from "./streams.js";
export * from "./suggest.js";
export * from "./canonical-json.js";
export type { MethodView, NotificationView, ProtocolView } from "./protocol-view.js";
export type { ValidationMode } from "./protocol-view.js";
export { MessageChecker, checkBareValue, codeMismatch, type Finding, type Sender, type SenderNote } from "./check-messages.js";
export { measureDepth, tooDeep } from "./json-depth.js";
export * from "./params.js";
