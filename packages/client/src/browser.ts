/**
 * The client SDK for browsers: everything in core.ts and the WebSocket transport over the
 * standard `WebSocket`. Imports no Node built-in (a test bundles it and runs it in Chromium).
 */
export * from "./core.js";
export { connectBrowserWebSocket, withToken, type BrowserWebSocketOptions } from "./browser-websocket.js";
