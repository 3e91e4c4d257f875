/**
 * The JSON-RPC 2.0 envelope: what a request, notification and response look like, and
 * how a parsed frame is classified before any method schema is consulted.
 */
import type { JsonRpcErrorObject } from "./errors.js";

export type JsonRpcId = string | number;

export interface JsonRpcRequest {
  jsonrpc: "2.0";
  id: JsonRpcId;
  method: string;
  params?: unknown;
}

export interface JsonRpcNotification {
  jsonrpc: "2.0";
  method: string;
  params?: unknown;
}

export type JsonRpcResponse =
  { jsonrpc: "2.0"; id: JsonRpcId | null; result: unknown } | { jsonrpc: "2.0"; id: JsonRpcId | null; error: JsonRpcErrorObject };

/** What a single (non-batch) message is, or why it is not a valid JSON-RPC message. */
export type Classified =
  | { kind: "request"; message: JsonRpcRequest }
  | { kind: "notification"; message: JsonRpcNotification }
  | { kind: "response"; message: JsonRpcResponse }
  | { kind: "invalid"; id: JsonRpcId | null; reason: string };

function isId(value: unknown): value is JsonRpcId {
  return typeof value === "string" || (typeof value === "number" && Number.isFinite(value));
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);

/** Classifies one parsed message. Unknown members make a message invalid, as JSON-RPC 2.0 defines it. */
export function classify(value: unknown): Classified {
  if (!isObject(value)) return { kind: "invalid", id: null, reason: "a JSON-RPC message must be an object" };
  const id = isId(value.id) ? value.id : null;
  if (value.jsonrpc !== "2.0") return { kind: "invalid", id, reason: 'jsonrpc must be "2.0"' };
  if ("id" in value && value.id !== null && !isId(value.id)) {
    return { kind: "invalid", id: null, reason: "id must be a string, a number or null" };
  }
  if ("method" in value) {
    if (typeof value.method !== "string" || value.method === "") {
      return { kind: "invalid", id, reason: "method must be a non-empty string" };
    }
    if ("params" in value && (value.params === null || typeof value.params !== "object")) {
      return { kind: "invalid", id, reason: "params must be an object or an array" };
    }
    for (const key of Object.keys(value)) {
      if (key !== "jsonrpc" && key !== "id" && key !== "method" && key !== "params") {
        return { kind: "invalid", id, reason: `unknown member "${key}" in a request` };
      }
    }
    if (!("id" in value)) return { kind: "notification", message: value as unknown as JsonRpcNotification };
    if (value.id === null) return { kind: "invalid", id: null, reason: "a request id must not be null" };
    return { kind: "request", message: value as unknown as JsonRpcRequest };
  }
  if ("result" in value || "error" in value) {
    if (!("id" in value)) return { kind: "invalid", id: null, reason: "a response must carry an id" };
    if ("result" in value && "error" in value) return { kind: "invalid", id, reason: "a response carries result or error, not both" };
    if ("error" in value) {
      const error = value.error;
      if (!isObject(error) || !Number.isInteger(error.code) || typeof error.message !== "string") {
        return { kind: "invalid", id, reason: "error must be an object with an integer code and a string message" };
      }
    }
    return { kind: "response", message: value as unknown as JsonRpcResponse };
  }
  return { kind: "invalid", id, reason: "a message needs a method (request or notification) or a result or error (response)" };
}
