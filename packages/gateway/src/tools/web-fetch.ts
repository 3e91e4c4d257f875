/**
 * `web_fetch`: GETs an http(s) URL and returns the body as text. Every failure (a bad URL,
 * a refused connection, a timeout, an error status) is a result the model sees.
 */
import { defineTool } from "./arguments.js";
import { truncateEnd } from "./output-limit.js";
import type { ToolResult } from "./tool.js";

/** Timeout of one fetch unless configured otherwise; the context's maxTimeoutMs caps it. */
export const WEB_FETCH_TIMEOUT_MS = 30_000;
/** Body bytes read at most; the rest is not downloaded. */
export const WEB_FETCH_MAX_BYTES = 5 * 1024 * 1024;
/** Characters of the body kept as `content`. */
export const WEB_FETCH_CONTENT_LIMIT = 100_000;
/** Same-host redirects followed before giving up. */
const MAX_REDIRECTS = 5;

export interface WebFetchToolOptions {
  /** Timeout of one fetch (default WEB_FETCH_TIMEOUT_MS); maxTimeoutMs still caps it. */
  readonly timeoutMs?: number;
}

/** The web_fetch tool with the gateway's configured timeout. */
export function createWebFetchTool(options: WebFetchToolOptions = {}) {
  const configuredTimeoutMs = options.timeoutMs ?? WEB_FETCH_TIMEOUT_MS;
  return defineTool({
    spec: {
      name: "web_fetch",
      description: `Fetch an http or https URL with GET and return the status, content type and body as text (cut at ${WEB_FETCH_CONTENT_LIMIT} characters).`,
      parameters: {
        type: "object",
        additionalProperties: false,
        required: ["url"],
        properties: {
          url: { type: "string", minLength: 1, description: "Absolute http:// or https:// URL." },
        },
      },
    },
    itemType: "webFetch",

    describe({ url }) {
      return { url };
    },

    async run({ url }, ctx) {
      const failed = (message: string, extra: Record<string, unknown> = {}): ToolResult => ({
        ok: false,
        content: message,
        item: { url, ...extra, error: { message } },
      });
      const started = performance.now();
      // A network failure or a timeout may not recur; a cancelled turn is not retried.
      const transient = (message: string, extra: Record<string, unknown> = {}): ToolResult => ({
        ...failed(message, extra),
        ...(ctx.signal.aborted ? {} : { retryable: true }),
        ...(timeout.aborted && !ctx.signal.aborted
          ? { timeout: { deadline_ms: timeoutMs, elapsed_ms: Math.round(performance.now() - started) } }
          : {}),
      });
      let target: URL;
      try {
        target = new URL(url);
      } catch {
        return failed(`not a valid URL: ${url}`);
      }
      if (target.protocol !== "http:" && target.protocol !== "https:")
        return failed(`only http and https URLs can be fetched, not ${target.protocol}`);
      if (ctx.signal.aborted) return failed("the fetch was not made: the turn was cancelled");

      const timeoutMs = Math.min(configuredTimeoutMs, ctx.maxTimeoutMs);
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = AbortSignal.any([ctx.signal, timeout]);
      // Tells a cancelled turn from a timeout when the fetch rejects with the shared signal.
      const whyStopped = () => (ctx.signal.aborted ? "cancelled" : timeout.aborted ? `timed out after ${timeoutMs} ms` : undefined);

      // Redirects are followed here, not by fetch, and only on the same host: the call was
      // judged (and perhaps approved) for this URL's domain, so another host is a new call
      // the model has to make, and the gateway judges on its own.
      let response: Response;
      for (let hops = 0; ; hops++) {
        try {
          response = await fetch(target, { signal, redirect: "manual" });
        } catch (error) {
          return transient(`fetching ${url} failed: ${whyStopped() ?? rootCause(error)}`);
        }
        const location = response.headers.get("location");
        if (response.status < 300 || response.status > 399 || location === null) break;
        const next = new URL(location, target);
        await response.body?.cancel();
        if (next.host !== target.host || (next.protocol !== "http:" && next.protocol !== "https:")) {
          const message = `${target.href} redirects to ${next.href}, on another host: fetch that URL to follow it`;
          return {
            ok: false,
            content: message,
            item: { url, status_code: response.status, content_type: response.headers.get("content-type") ?? "", error: { message } },
          };
        }
        if (hops >= MAX_REDIRECTS) return failed(`fetching ${url} failed: more than ${MAX_REDIRECTS} redirects`);
        target = next;
      }
      const contentType = response.headers.get("content-type") ?? "";
      const head = { status_code: response.status, content_type: contentType };
      let body: { bytes: Uint8Array; complete: boolean };
      try {
        body = await readBody(response, WEB_FETCH_MAX_BYTES);
      } catch (error) {
        return transient(`reading the body of ${url} failed: ${whyStopped() ?? rootCause(error)}`, head);
      }

      // When the download was cut, the declared length is the body's real size, if known.
      const declared = Number(response.headers.get("content-length"));
      const bytes = !body.complete && Number.isInteger(declared) && declared > body.bytes.length ? declared : body.bytes.length;
      const text = isText(contentType, body.bytes) ? new TextDecoder().decode(body.bytes) : undefined;
      let content = text === undefined ? "" : truncateEnd(text, WEB_FETCH_CONTENT_LIMIT);
      if (text !== undefined && !body.complete && content === text)
        content += `\n[… truncated: only the first ${body.bytes.length} bytes were downloaded]`;
      const item = { url, ...head, bytes, content };
      const header =
        `HTTP ${response.status} ${response.statusText}`.trim() +
        `, ${contentType || "no content type"}, ${bytes} bytes${body.complete ? "" : " (not all downloaded)"}`;
      const shown = text === undefined ? "(binary content, not shown)" : content;
      // A server error or a rate limit may pass; other statuses are the answer.
      const retryable = response.status >= 500 || response.status === 429;
      return { ok: response.ok, content: `${header}\n\n${shown}`, item, ...(retryable ? { retryable: true } : {}) };
    },
  });
}

export const webFetchTool = createWebFetchTool();

/** Reads up to `max` bytes, then stops the download. */
async function readBody(response: Response, max: number): Promise<{ bytes: Uint8Array; complete: boolean }> {
  if (!response.body) return { bytes: new Uint8Array(0), complete: true };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { bytes: Buffer.concat(chunks, total), complete: true };
    chunks.push(value);
    total += value.length;
    if (total >= max) {
      await reader.cancel();
      return { bytes: Buffer.concat(chunks, total).subarray(0, max), complete: false };
    }
  }
}

/** Whether a body is worth showing as text: a textual content type, or no type and no NUL bytes. */
function isText(contentType: string, bytes: Uint8Array): boolean {
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  if (type === "") return !bytes.includes(0);
  return type.startsWith("text/") || /[/+](json|xml|javascript|ecmascript|yaml|x-yaml|csv|x-www-form-urlencoded)$/.test(type);
}

/** The innermost cause's message: `fetch failed` says less than `connect ECONNREFUSED 127.0.0.1:9`. */
function rootCause(error: unknown): string {
  let current = error;
  while (current instanceof Error && current.cause instanceof Error) current = current.cause;
  return current instanceof Error ? current.message : String(current);
}
