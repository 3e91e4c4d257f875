import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { renderHtml } from "../../../packages/conformance/src/report/html.js";
import type { RunReport } from "../../../packages/conformance/src/results.js";
import { CHROMIUM_PATH, chromiumMissing } from "../../chromium.js";
import { certifiedReport, result, smallReport } from "./fixtures.js";

const missing = chromiumMissing("HTML report browser test");

const hostile = "</script><b>bold</b><img src=x onerror=alert(1)>";

/** The small run plus a failure whose message, statement and frames try to inject markup. */
function hostileReport(): RunReport {
  const report = smallReport();
  return {
    ...report,
    gateway: { url: 'ws://127.0.0.1:1/"><script>alert(1)</script>' },
    results: [
      ...report.results,
      result("CORE-009", "core", "MUST", "fail", {
        statement: `The gateway echoes ${hostile}`,
        message: hostile,
        invalidFrame: { jsonrpc: "2.0", method: hostile },
        transcript: [{ direction: "received", atMs: 70, frame: { jsonrpc: "2.0", method: hostile } }],
      }),
    ],
  };
}

describe("the HTML report", () => {
  it("leads with the gateway's stop under the verdict, and lists what it left not reached in a section of its own", () => {
    const report = certifiedReport();
    const html = renderHtml({
      ...report,
      certified: false,
      stopped: {
        summary: "the gateway exited on SIGSEGV",
        signal: "SIGSEGV",
        stderr: "Segmentation fault <core dumped>",
        inFlight: [],
        requirement: "CORE-001",
        notReached: 1,
      },
      results: report.results.map((r) =>
        r.id === "PERM-001" ? { ...r, outcome: "not_reached", message: "the gateway exited on SIGSEGV (reported under CORE-001)" } : r,
      ),
    });
    const stop = html.indexOf("<strong>The gateway exited on SIGSEGV</strong>");
    expect(stop).toBeGreaterThan(html.indexOf('<div class="verdict '));
    expect(stop).toBeLessThan(html.indexOf("<h2>MUST results by capability</h2>"));
    expect(html).toContain("<pre>its stderr ends with:\nSegmentation fault &lt;core dumped&gt;</pre>");
    expect(html).toContain("<pre>Reported as a failure of CORE-001; 1 requirement was not reached because of it.</pre>");
    expect(html).toMatch(/<section id="not-reached">\n<h2>Not reached \(1\)<\/h2>/);
  });

  it("is one self-contained document: no script, nothing loaded from elsewhere", () => {
    const html = renderHtml(hostileReport());
    expect(html.startsWith("<!DOCTYPE html>")).toBe(true);
    expect(html).not.toMatch(/<script/i);
    expect(html).not.toMatch(/<link|<img|<iframe|@import|url\(/i);
    expect(html).not.toMatch(/\ssrc=/i);
    for (const [, target] of html.matchAll(/href="([^"]*)"/g)) expect(target).toMatch(/^#/);
    expect(html).toContain(`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`);
  });

  it("escapes every value from the run", () => {
    const html = renderHtml(hostileReport());
    const escaped = "&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;&lt;img src&#x3D;x onerror&#x3D;alert(1)&gt;";
    expect(html).toContain(`<div class="message mono">${escaped}</div>`);
    expect(html).toContain(`The gateway echoes ${escaped}`);
    expect(html).toContain(`&quot;method&quot;: &quot;${escaped}&quot;`);
    expect(html).toContain("ws://127.0.0.1:1/&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html).not.toContain("<b>bold");
  });

  it("shows the verdict, the MUST results per capability and SHOULD/MAY apart", () => {
    const html = renderHtml(smallReport());
    expect(html).toContain(
      "<strong>Not certified</strong>Full requested, Core achieved; failing MUSTs: ROUTE-001; stale expected failures: PERM-001.",
    );
    expect(html).toContain("<tr><td>core</td><td>yes</td><td>1 passed, 1 failed (1 expected)</td></tr>");
    expect(html).toContain('<tr><td>work</td><td><span class="muted">no</span></td><td>1 skipped</td></tr>');
    expect(html).toContain("SHOULD: 1 passed · MAY: 1 error");
    expect(renderHtml(certifiedReport())).toContain("<strong>Certified Full</strong>claims core, permissions; Full requested.");
  });

  it("gives each failure and harness error its message, invalid frame and marked transcript", () => {
    const html = renderHtml(smallReport());
    const route = html.slice(
      html.indexOf('<article class="result" id="req-ROUTE-001">'),
      html.indexOf("</article>", html.indexOf('id="req-ROUTE-001"')),
    );
    expect(route).toContain("must be one of InProgress, Completed, Interrupted, Failed; got &quot;Running&quot;");
    expect(route).toContain("<h3>Invalid frame</h3>");
    expect(route).toContain('<div class="frame sent"><div class="label mono">→ sent +50 ms</div>');
    expect(route).toContain('<div class="frame received invalid"><div class="label mono">← received +61 ms</div>');
    expect(html).toContain('<article class="result" id="req-ROUTE-002">');
    expect(html).toContain('<p class="expected">Expected failure: status fold lands in 0.2</p>');
  });

  describe.skipIf(missing !== undefined)(`in a browser with JavaScript off${missing ? ` (skipped: ${missing})` : ""}`, () => {
    const dir = mkdtempSync(join(tmpdir(), "turnspec-html-"));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it("loads nothing else, shows the hostile text as text, and filters by section through links", async () => {
      const file = join(dir, "report.html");
      writeFileSync(file, renderHtml(hostileReport()));
      const url = pathToFileURL(file).href;
      const browser = await chromium.launch({ executablePath: CHROMIUM_PATH });
      try {
        const context = await browser.newContext({ javaScriptEnabled: false });
        const page = await context.newPage();
        const requested: string[] = [];
        page.on("request", (request) => requested.push(request.url()));
        await page.goto(url);
        expect(requested).toEqual([url]);
        expect(await page.locator("#req-CORE-009 .message").textContent()).toBe(hostile);
        expect(await page.locator("b, img").count()).toBe(0);
        for (const id of ["failed", "passed", "skipped"]) expect(await page.locator(`section#${id}`).isVisible()).toBe(true);

        await page.click('nav.filters a[href="#failed"]');
        expect(await page.locator("section#failed").isVisible()).toBe(true);
        expect(await page.locator("section#passed").isVisible()).toBe(false);
        expect(await page.locator("section#skipped").isVisible()).toBe(false);

        await page.click('nav.filters a[href="#"]');
        expect(await page.locator("section#passed").isVisible()).toBe(true);
        expect(requested.filter((u) => !u.startsWith(url))).toEqual([]);
      } finally {
        await browser.close();
      }
    });
  });
});
