/** The bounds on tool output keep what matters and say what they dropped. */
import { describe, expect, it } from "vitest";
import { OutputCapture, truncateEnd, truncateMiddle } from "../../packages/gateway/src/tools/output-limit.js";

describe("output limits", () => {
  it("leaves short text alone", () => {
    expect(truncateEnd("abc", 3)).toBe("abc");
    expect(truncateMiddle("abc", 3)).toBe("abc");
  });

  it("cuts the end or the middle with a note", () => {
    expect(truncateEnd("abcdefgh", 3)).toBe("abc\n[… truncated: showing the first 3 of 8 characters]");
    expect(truncateMiddle("abcdefghij", 4)).toBe("ab\n[… 6 characters omitted …]\nij");
  });

  it("never splits a surrogate pair", () => {
    expect(truncateEnd("a😀b", 2)).toBe("a\n[… truncated: showing the first 1 of 4 characters]");
    expect(truncateMiddle("😀xx😀", 3)).toBe("😀\n[… 2 characters omitted …]\n😀");
  });

  it("captures a stream in bounded memory, keeping its first and latest parts", () => {
    const all = new OutputCapture(100);
    all.push("hello ");
    all.push("world");
    expect(all.text()).toBe("hello world");

    const capture = new OutputCapture(10);
    for (let i = 0; i < 1000; i++) capture.push(String(i % 10));
    expect(capture.text()).toBe("01234\n[… 990 characters omitted …]\n56789");
    const chunky = new OutputCapture(10);
    chunky.push("abc");
    chunky.push("defghijkl");
    chunky.push("mnopqrstuvwxyz");
    expect(chunky.text()).toBe("abcde\n[… 16 characters omitted …]\nvwxyz");
  });
});
