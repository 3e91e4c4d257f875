/**
 * The client SDK for Node: everything in core.ts, plus the transports that need Node (a
 * gateway started as a child process over stdio, and WebSocket through the `ws` package
 * with the token in the Authorization header and compression off). They are the gateway
 * project's own transports, re-exported here.
 */
export * from "./core.js";
export { ChildProcessTransport, spawnStdioTransport, type SpawnStdioOptions } from "@turnspec/rpc/transport";
export { connectWebSocket, WebSocketHandshakeError, type WebSocketClientOptions } from "@turnspec/rpc/transport";
