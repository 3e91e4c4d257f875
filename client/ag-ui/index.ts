/** The AG-UI bridge of the client SDK: a turnspec gateway served to AG-UI clients over HTTP and SSE. */
export { AgUiBridge, AgUiRequestError, type AgUiBridgeOptions } from "./bridge.js";
export { serveAgUi, type AgUiServer } from "./serve.js";
