/**
 * The checks an HTTP server on this machine makes before it reads a request, shared by
 * the WebSocket transport, the AG-UI endpoint and the inspector, so that each is written
 * once:
 *   - the bearer token, compared in constant time;
 *   - the `Host` header, which must name this server exactly: a page that reaches a
 *     loopback port through a name of its own (DNS rebinding) sends that name;
 *   - the `Origin` header, which browsers send with every cross-site request and every
 *     WebSocket upgrade: only the listed origins' pages are served (none by default);
 *     clients outside a browser send none.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

/** Whether `host` (an address or name to listen on, IPv6 bare or in brackets) names this machine only. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "").toLowerCase();
  return bare === "localhost" || bare === "::1" || /^127(\.\d{1,3}){3}$/.test(bare);
}

/**
 * The `Host` values that name a server listening on `host`:`port`: that address itself and,
 * for a loopback server, the other names of the loopback (`localhost`, `127.0.0.1`, `[::1]`),
 * each with the port. Nothing else: a foreign name is how DNS rebinding comes in.
 */
export function serverAuthorities(host: string, port: number): ReadonlySet<string> {
  const shown = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  const names = [shown, ...(isLoopbackHost(host) ? ["localhost", "127.0.0.1", "[::1]"] : [])];
  return new Set(names.map((name) => `${name.toLowerCase()}:${port}`));
}

/** Whether the request's `Host` header is one of `authorities`. */
export function hostAllowed(request: IncomingMessage, authorities: ReadonlySet<string>): boolean {
  return authorities.has((request.headers.host ?? "").toLowerCase());
}

/** The check of `Origin` against an allow-list (`https://app.example.com`, or `null` for an opaque origin); empty allows no browser page. */
export function originAllowed(allowed: readonly string[]): (origin: string | undefined) => boolean {
  const origins = new Set(allowed.map((o) => o.toLowerCase()));
  return (origin) => origin === undefined || origins.has(origin.toLowerCase());
}

/** Where a client may present the token: the Authorization header, and for WebSocket the `token` query parameter too (browsers cannot set headers on an upgrade). */
export type TokenPlaces = "header" | "header-or-query";

/**
 * The token check for `token`: both sides are hashed first, so the comparison neither
 * stops at the first difference nor reveals the length.
 */
export function bearerTokenCheck(token: string, places: TokenPlaces = "header"): (request: IncomingMessage) => boolean {
  if (token === "") throw new Error("bearerTokenCheck: the token is empty");
  const expected = digest(token);
  return (request) => {
    const presented = presentedToken(request, places);
    return presented !== undefined && timingSafeEqual(digest(presented), expected);
  };
}

/** The token from `Authorization: Bearer …`, else (when allowed) from the `token` query parameter. */
export function presentedToken(request: IncomingMessage, places: TokenPlaces): string | undefined {
  const bearer = /^Bearer\s+(.+?)\s*$/i.exec(request.headers.authorization ?? "");
  if (bearer) return bearer[1];
  if (places === "header") return undefined;
  return new URL(request.url ?? "/", "http://localhost").searchParams.get("token") ?? undefined;
}

/** SHA-256 of a secret, for comparisons in constant time. */
export function digest(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}

/** Whether `given` is the secret whose digest is `expected`, in constant time. */
export function secretMatches(given: string | undefined, expected: Buffer): boolean {
  return given !== undefined && timingSafeEqual(digest(given), expected);
}
