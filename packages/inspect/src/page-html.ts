/**
 * The inspector page's HTML shell and the assets it loads: the page itself is built by
 * the bundle (page/main.ts), which fills in this skeleton. Nothing is loaded from anywhere
 * but the inspector's own server.
 */

/** The files of the page bundle, by name, with their content types. */
export const INSPECTOR_ASSETS: Readonly<Record<string, string>> = {
  "inspector.js": "text/javascript; charset=utf-8",
  "inspector.css": "text/css; charset=utf-8",
};

export function pageHtml(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>turnspec inspect</title>
<link rel="stylesheet" href="/assets/inspector.css">
<script type="module" src="/assets/inspector.js"></script>
</head>
<body>
<noscript>The inspector is a script: enable JavaScript for this page.</noscript>
<div id="app"></div>
</body>
</html>
`;
}
