/** The AG-UI bridge of the client SDK: a turnspec gateway served to AG-UI clients over HTTP and SSE. */
export { AgUiBridge, AgUiRequestError, DEFAULT_MAX_UNSENT_BYTES, type AgUiBridgeOptions } from "./bridge.js";
export { serveAgUi, type AgUiServer, type AgUiServeOptions } from "./serve.js";
export { serveAgUiGateway, threadMapBeside, type AgUiGatewayOptions, type InProcessGateway, type RunningAgUiGateway } from "./gateway.js";
export { AgUiThreadMap } from "./thread-map.js";
