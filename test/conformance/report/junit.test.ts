import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { renderJunit, xmlAttribute, xmlText } from "../../../packages/conformance/src/report/junit.js";
import type { RunReport } from "../../../packages/conformance/src/results.js";
import { certifiedReport, result, smallReport } from "./fixtures.js";
import { expectGolden } from "./golden.js";

describe("the JUnit report", () => {
  it("has a testsuite per capability and a testcase per requirement (golden)", () => {
    expectGolden("junit-small.xml", renderJunit(smallReport()));
  });

  it("counts a listed failure as skipped and a stale entry as a failure", () => {
    const xml = renderJunit(smallReport());
    expect(xml).toContain('<testsuites name="turnspec suite 7.0" tests="7" failures="2" errors="1" skipped="2" time="7.250"');
    expect(xml).toContain('<testsuite name="core" tests="3" failures="0" errors="0" skipped="1"');
    expect(xml).toContain('<testsuite name="permissions" tests="1" failures="1" errors="0" skipped="0"');
  });

  it("reports a certified run without failures", () => {
    const xml = renderJunit(certifiedReport());
    expect(xml).toContain('<testsuites name="turnspec suite 7.0" tests="4" failures="1" errors="0" skipped="1"');
    expect(xml).toContain('<property name="verdict" value="certified"/>');
  });

  it("escapes markup, quotes and characters XML cannot hold", () => {
    const message = "got </failure><x a=\"1\"> & 'quoted' \u0000\u001b[31m\u0007 \uD800 ]]> end";
    const report: RunReport = {
      ...certifiedReport(),
      results: [
        result("CORE-001", "core", "MUST", "fail", {
          message,
          transcript: [{ direction: "received", atMs: 1, frame: { text: "\u001b<b>" } }],
        }),
      ],
    };
    const xml = renderJunit(report);
    const inAttribute =
      "got &lt;/failure&gt;&lt;x a=&quot;1&quot;&gt; &amp; &apos;quoted&apos; \\u0000\\u001B[31m\\u0007 \\uD800 ]]&gt; end";
    const inText = "got &lt;/failure&gt;&lt;x a=\"1\"&gt; &amp; 'quoted' \\u0000\\u001B[31m\\u0007 \\uD800 ]]&gt; end";
    expect(xml).toContain(`<failure type="MUST" message="${inAttribute}">${inText}</failure>`);
    expect(xml).toContain('"text": "\\u001b&lt;b&gt;"');
    expect(xml).not.toMatch(/[\u0000-\u0008\u000B\u000C\u000E-\u001F]/);
  });

  it.each([
    ["line breaks and tabs in an attribute", xmlAttribute("a\nb\tc\r"), "a&#10;b&#9;c&#13;"],
    ["line breaks in text", xmlText("a\nb"), "a\nb"],
    ["a paired surrogate", xmlText("😀"), "😀"],
    ["U+FFFE", xmlText("\uFFFE"), "\\uFFFE"],
  ])("keeps %s", (_name, actual, expected) => {
    expect(actual).toBe(expected);
  });

  // Any UTF-16 string, lone surrogates and every control character included.
  const anyText = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n)), maxLength: 40 });
  // Only characters XML 1.0 allows, and markup characters only as entity or character references.
  const wellFormedText =
    /^(?:[\t\n\r\u0020-\u0025\u0027-\u003B\u003D\u003F-\uD7FF\uE000-\uFFFD]|[\uD800-\uDBFF][\uDC00-\uDFFF]|>|&(?:amp|lt|gt|quot|apos|#\d+);)*$/;
  const wellFormedAttribute =
    /^(?:[\u0020\u0021\u0023-\u0025\u0028-\u003B\u003D\u003F-\uD7FF\uE000-\uFFFD]|[\uD800-\uDBFF][\uDC00-\uDFFF]|&(?:amp|lt|gt|quot|apos|#\d+);)*$/;

  it("writes any string as well-formed text and attribute values", () => {
    fc.assert(
      fc.property(anyText, (text) => {
        expect(xmlText(text)).toMatch(wellFormedText);
        expect(xmlAttribute(text)).toMatch(wellFormedAttribute);
      }),
    );
  });
});
