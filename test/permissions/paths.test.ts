/**
 * Paths are judged by where they really lead: through `..`, through links (also from a
 * file that does not exist yet), and with whole-component root boundaries.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isWithin, outsideRoots, resolveRealPath } from "../../packages/gateway/src/permissions/paths.js";

// Real path of the temp dir itself: on macOS /tmp is a link, and every expectation below is a real path.
const dir = realpathSync(mkdtempSync(join(tmpdir(), "turnspec-paths-")));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ws = join(dir, "ws");
const outside = join(dir, "outside");
const etc = realpathSync("/etc");
mkdirSync(join(ws, "src", "deep"), { recursive: true });
mkdirSync(join(ws, "inner"), { recursive: true });
mkdirSync(outside);
writeFileSync(join(ws, "src", "a.txt"), "a");
writeFileSync(join(outside, "secret"), "s");
symlinkSync("/etc", join(ws, "etc-link")); // a file inside the root that leads to /etc
symlinkSync(outside, join(ws, "out-link")); // a folder link out of the root
symlinkSync("inner", join(ws, "in-link")); // a relative folder link that stays inside
symlinkSync("../outside/secret", join(ws, "rel-secret")); // a relative link climbing out
symlinkSync(join(outside, "not-yet"), join(ws, "dangling")); // writing here would create outside/not-yet
symlinkSync("loop-b", join(ws, "loop-a"));
symlinkSync("loop-a", join(ws, "loop-b"));
symlinkSync(ws, join(dir, "ws-link")); // the root itself, named through a link

/** Joins without normalizing: path.join would remove the `..` and `.` under test before they got there. */
const raw = (...parts: string[]) => parts.join("/");

describe("resolveRealPath", () => {
  const cases: [string, string, string][] = [
    ["an existing file", join(ws, "src", "a.txt"), join(ws, "src", "a.txt")],
    ["`..` and `.` between existing folders", raw(ws, "src", "deep", "..", ".", "a.txt"), join(ws, "src", "a.txt")],
    ["`..` above the filesystem root stays at the root", "/../../etc", etc],
    ["repeated separators", raw(ws, "", "src", "", "a.txt"), join(ws, "src", "a.txt")],
    ["a link to /etc", join(ws, "etc-link"), etc],
    ["a file beneath a link to /etc", join(ws, "etc-link", "passwd"), join(etc, "passwd")],
    ["a file not yet created under a linked folder", join(ws, "out-link", "new", "file.txt"), join(outside, "new", "file.txt")],
    ["a file not yet created under a relative link that stays inside", join(ws, "in-link", "new.txt"), join(ws, "inner", "new.txt")],
    ["a relative link climbing out", join(ws, "rel-secret"), join(outside, "secret")],
    ["a dangling link: where a write would land", join(ws, "dangling"), join(outside, "not-yet")],
    // As the kernel walks it: `..` after a link is the parent of the link's target.
    ["`..` after a link", raw(ws, "out-link", "..", "ws", "src"), join(ws, "src")],
    ["`..` after a missing folder climbs back into existing ones", raw(ws, "missing", "..", "out-link", "secret"), join(outside, "secret")],
    ["a missing path stays as written", join(ws, "missing", "x", "y"), join(ws, "missing", "x", "y")],
    ["the root named through a link", join(dir, "ws-link", "src"), join(ws, "src")],
  ];
  it.each(cases)("%s", (_name, given, want) => {
    expect(resolveRealPath(given)).toBe(want);
  });

  it("refuses a relative path", () => {
    expect(() => resolveRealPath("src/a.txt")).toThrow(/absolute path, got "src\/a.txt"/);
  });

  it("gives up on a link loop with a clear error", () => {
    expect(() => resolveRealPath(join(ws, "loop-a", "x"))).toThrow(/more than 40 symbolic links \(a loop\?\)/);
  });
});

describe("isWithin", () => {
  const cases: [string, string, boolean][] = [
    ["/a/b", "/a/b", true],
    ["/a/b/c", "/a/b", true],
    ["/a/b/c/d", "/a/b/", true],
    ["/a/bc", "/a/b", false],
    ["/a/b.txt", "/a/b", false],
    ["/a", "/a/b", false],
    ["/etc/passwd", "/", true],
  ];
  it.each(cases)("%s within %s: %s", (path, root, want) => {
    expect(isWithin(path, root)).toBe(want);
  });
});

describe("outsideRoots", () => {
  it("keeps paths inside the roots quiet", () => {
    expect(outsideRoots([join(ws, "src", "a.txt"), join(ws, "in-link", "new.txt"), ws], [ws])).toEqual([]);
  });

  it("reports a link inside the root that leads to /etc, as its real path", () => {
    expect(outsideRoots([join(ws, "etc-link"), join(ws, "etc-link", "passwd")], [ws])).toEqual([etc, join(etc, "passwd")]);
  });

  it("reports a file not yet created under a folder linked out of the root", () => {
    expect(outsideRoots([join(ws, "out-link", "new.txt")], [ws])).toEqual([join(outside, "new.txt")]);
  });

  it("reports a dangling link that points out", () => {
    expect(outsideRoots([join(ws, "dangling")], [ws])).toEqual([join(outside, "not-yet")]);
  });

  it("compares whole components: a sibling sharing the root's prefix is outside", () => {
    const sibling = join(dir, "wsx", "file");
    expect(outsideRoots([sibling], [ws])).toEqual([sibling]);
  });

  it("accepts any of several roots, and roots named through links", () => {
    expect(outsideRoots([join(outside, "secret"), join(ws, "src")], [join(dir, "ws-link"), outside])).toEqual([]);
  });

  it("lists each outside path once", () => {
    expect(outsideRoots([join(ws, "out-link", "secret"), join(outside, "secret"), join(ws, "rel-secret")], [ws])).toEqual([
      join(outside, "secret"),
    ]);
  });

  it("reports a path it cannot resolve as outside, rather than guessing it is inside", () => {
    expect(outsideRoots([join(ws, "loop-a")], [ws])).toEqual([join(ws, "loop-a")]);
  });

  it("refuses relative paths", () => {
    expect(() => outsideRoots(["src/a.txt"], [ws])).toThrow(/absolute paths, got "src\/a.txt"/);
    expect(() => outsideRoots([ws], ["ws"])).toThrow(/absolute path/);
  });
});
