/**
 * A turn's network domain lists (the security snapshot's network.allow_domains and
 * deny_domains) and whether a host and port are on them. One matcher for every way out:
 * web_fetch is judged by it in the tool gate, and a shell command's connections by the
 * sandbox's filtering proxy (sandbox/network-proxy.ts).
 *
 * An entry is a host name (`example.com`), a leading `*.` for every name below it
 * (`*.example.com`: `api.example.com`, not `example.com` itself), or an IP address; either
 * may end in `:port` to cover that port only (`127.0.0.1:8080`, `[::1]:8080`). An entry
 * without a port covers every port. A deny entry wins over an allow entry.
 */
import { isIP } from "node:net";
import type { TurnNetworkPolicySnapshot } from "@turnspec/protocol/types";

/** One parsed entry of a domain list. */
export interface DomainPattern {
  /** The host, lowercased, without a trailing dot or IPv6 brackets; for a wildcard, the part after `*.`. */
  readonly host: string;
  /** Covers the names below `host`, not `host` itself. */
  readonly wildcard: boolean;
  /** Covers this port only; undefined: every port. */
  readonly port?: number;
}

/** How the lists judge one host and port. */
export type DomainVerdict =
  | { readonly verdict: "allowed"; readonly entry: string }
  | { readonly verdict: "denied"; readonly entry: string }
  | { readonly verdict: "unlisted" };

/**
 * A host as the lists compare it: lowercased, no trailing dot, no IPv6 brackets, and an IP
 * address in its one canonical spelling. Every spelling a resolver or a URL parser takes for
 * an IPv4 address (`127.1`, `0x7f.1`, `2130706433`, `017700000001`) is its dotted form, and
 * an IPv4 address mapped into IPv6 (`::ffff:127.0.0.1`, `::ffff:7f00:1`) is the IPv4 one: a
 * list entry for 127.0.0.1 covers them all, and none of them slips past it.
 */
export function normalizeHost(host: string): string {
  let trimmed = host.trim().toLowerCase().replace(/\.$/, "");
  if (trimmed.startsWith("[") && trimmed.endsWith("]")) trimmed = trimmed.slice(1, -1);
  if (isIP(trimmed) === 6) return canonicalIPv6(trimmed);
  // The WHATWG URL parser reads a host whose last label is a number as IPv4, in every base.
  if (/^[0-9a-fx.]+$/.test(trimmed)) {
    try {
      const parsed = new URL(`http://${trimmed}/`).hostname;
      if (isIP(parsed) === 4) return parsed;
    } catch {
      // Not an address in any spelling: a name (or nothing), compared as written.
    }
  }
  return trimmed;
}

/** An IPv6 address compressed as the URL parser writes it, or the IPv4 address it maps. */
function canonicalIPv6(address: string): string {
  const compressed = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(compressed);
  if (!mapped) return compressed;
  const high = parseInt(mapped[1]!, 16);
  const low = parseInt(mapped[2]!, 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/**
 * Whether `address` (canonical, from normalizeHost) is one of this machine's or its
 * network link's own: loopback, unspecified, link-local (cloud metadata services live at
 * 169.254.169.254). A name that resolves to one is not let through on the strength of the
 * name (network-proxy.ts).
 */
export function isLocalAddress(address: string): boolean {
  if (isIP(address) === 4) return /^(127\.|0\.|169\.254\.)/.test(address);
  if (isIP(address) === 6) return address === "::1" || address === "::" || /^fe[89ab][0-9a-f]:/.test(address);
  return false;
}

const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;

/** Parses one list entry; throws an Error saying what is wrong with it. */
export function parseDomainPattern(entry: string): DomainPattern {
  let rest = entry.trim().toLowerCase();
  let port: number | undefined;
  // A port follows the last colon, except inside an IPv6 address (bracketed when it has a port).
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(rest);
  if (bracketed) {
    rest = bracketed[1]!;
    if (bracketed[2] !== undefined) port = Number(bracketed[2]);
    if (isIP(rest) !== 6) throw new Error(`${JSON.stringify(entry)}: ${rest} in brackets is not an IPv6 address`);
  } else if (isIP(rest) !== 6) {
    const colon = rest.lastIndexOf(":");
    if (colon >= 0) {
      const digits = rest.slice(colon + 1);
      if (!/^\d+$/.test(digits)) throw new Error(`${JSON.stringify(entry)}: the port after ":" must be a number`);
      port = Number(digits);
      rest = rest.slice(0, colon);
    }
  }
  if (port !== undefined && !(port >= 1 && port <= 65535))
    throw new Error(`${JSON.stringify(entry)}: the port must be between 1 and 65535`);
  const wildcard = rest.startsWith("*.");
  const written = (wildcard ? rest.slice(2) : rest).replace(/\.$/, "");
  // An address entry in any spelling is kept in the canonical one, as hosts are compared.
  const host = wildcard || written === "" ? written : normalizeHost(written);
  if (host === "") throw new Error(`${JSON.stringify(entry)}: no host name`);
  if (isIP(host) === 0 && !host.split(".").every((label) => LABEL.test(label))) {
    throw new Error(`${JSON.stringify(entry)}: not a host name, "*." followed by one, or an IP address (optionally with ":port")`);
  }
  if (wildcard && isIP(host) !== 0) throw new Error(`${JSON.stringify(entry)}: "*." goes before a host name, not an IP address`);
  return { host, wildcard, ...(port === undefined ? {} : { port }) };
}

/** Whether `pattern` covers `host` (normalized) on `port`. */
export function patternMatches(pattern: DomainPattern, host: string, port: number): boolean {
  if (pattern.port !== undefined && pattern.port !== port) return false;
  return pattern.wildcard ? host.endsWith(`.${pattern.host}`) : host === pattern.host;
}

/**
 * How `policy`'s lists judge a connection to `host` on `port`: denied when a deny entry
 * covers it (whatever the allow list says), allowed when an allow entry does, unlisted
 * otherwise. What an unlisted host means is the mode's: under `restricted` the proxy
 * refuses it, and web_fetch asks as the profile says.
 */
export function judgeDomain(
  policy: Pick<TurnNetworkPolicySnapshot, "allow_domains" | "deny_domains">,
  host: string,
  port: number,
): DomainVerdict {
  const normalized = normalizeHost(host);
  const hit = (list: readonly string[]) => list.find((entry) => patternMatches(parseDomainPattern(entry), normalized, port));
  const denied = hit(policy.deny_domains);
  if (denied !== undefined) return { verdict: "denied", entry: denied };
  const allowed = hit(policy.allow_domains);
  return allowed !== undefined ? { verdict: "allowed", entry: allowed } : { verdict: "unlisted" };
}
