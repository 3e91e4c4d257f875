/**
 * How the inspector's page presents the one-time token to its server, named once for the
 * server and the page: as `Authorization: Bearer <token>` on /api/ requests, and as a
 * WebSocket subprotocol on /gateway, where a browser cannot set headers. The page offers
 * INSPECTOR_PROTOCOL beside the token's subprotocol, and the server answers with that one.
 */

/** The WebSocket subprotocol the page asks for (and the server selects). */
export const INSPECTOR_PROTOCOL = "turnspec-inspector";

/** The prefix of the subprotocol that carries the token (`turnspec-token.<token>`; the token is base64url). */
export const TOKEN_PROTOCOL_PREFIX = "turnspec-token.";
