/**
 * The transports, for any JSON-RPC protocol: one frame is one serialized message (or
 * batch). Servers and clients of each kind, next to each other:
 *   - stdio: a server over any pair of streams (`stdioServerTransport`, process.stdin and
 *     stdout by default), and a client that starts the server as a child process;
 *   - WebSocket: a server with a bearer token or an `authenticate` hook, and a client;
 *   - HTTP: one POST per message or batch (JSON-RPC over HTTP, as OpenRPC services speak it),
 *     a client transport and a server of a frame handler;
 *   - in memory: a linked pair, for tests.
 */
export { createInMemoryPair, type Transport } from "../index.js";
export { CLIENT_MAX_FRAME_BYTES, checkMaxFrameBytes, type OversizedReply } from "./frame-limit.js";
export { StdioTransport, stdioServerTransport, type StdioServerOptions, type StdioTransportOptions } from "./stdio.js";
export { ChildProcessTransport, spawnStdioTransport, type ChildExit, type SpawnStdioOptions } from "./child-process.js";
export {
  WebSocketHandshakeError,
  WebSocketTransport,
  connectWebSocket,
  startWebSocketServer,
  type ConnectionInfo,
  type RunningWebSocketServer,
  type UpgradeRefusal,
  type WebSocketClientOptions,
  type WebSocketServerOptions,
} from "./websocket.js";
export {
  bearerTokenCheck,
  digest,
  hostAllowed,
  isLoopbackHost,
  originAllowed,
  secretMatches,
  serverAuthorities,
  type TokenPlaces,
} from "./http-guard.js";
export {
  HttpClientTransport,
  HttpTransportError,
  startHttpServer,
  type HttpClientOptions,
  type HttpServerOptions,
  type RunningHttpServer,
} from "./http.js";
