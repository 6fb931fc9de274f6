/**
 * The session viewer's HTML: one document with its style and its one script inline, allowed by
 * hash in a Content-Security-Policy that permits nothing else (no remote loads, no inline event
 * handlers, no images, no frames, no form posts). Two forms:
 *
 * - `livePage`: served by the API (`GET /view/sessions/{id}`); holds no session data. Its script
 *   reads the session from the API with the key the reader enters (see client.ts).
 * - `exportPage`: a single offline file with the view model embedded; it connects nowhere.
 */
import { createHash } from "node:crypto";
import type { ViewModel } from "./view-model";

/**
 * Loaded with `require` so this (Node) project does not type-check the browser script: that one
 * is checked with the DOM's types by its own project (browser/tsconfig.json).
 */
const { viewerClient } = require("./browser/client") as { viewerClient: () => void };

export const VIEWER_STYLE = `
:root { color-scheme: light dark; --muted: #777; --line: #8884; --add: #2a2; --del: #c33; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1100px; padding: 1rem; }
h1 { font-size: 1.2rem; margin: 0 0 .25rem; }
.facts, .time, .usage { color: var(--muted); }
.entry { border-left: 3px solid var(--line); margin: .6rem 0; padding: .2rem .6rem;
  content-visibility: auto; contain-intrinsic-size: auto 60px; }
.entry .title { display: flex; flex-wrap: wrap; gap: .6rem; font-size: 12px; }
.kind { font-weight: 600; }
.kind-user { border-color: #36c; } .kind-assistant { border-color: #3a6; }
.kind-tool_result, .kind-bash { border-color: #b80; } .kind-compaction, .kind-branch_summary { border-color: #a4c; }
.kind-setting, .kind-label, .kind-info, .kind-custom { border-color: var(--line); font-size: 12px; }
.kind-live { border-color: #e60; }
.label { background: #fd4; color: #000; padding: 0 .4rem; border-radius: 3px; }
pre { white-space: pre-wrap; word-break: break-word; margin: .3rem 0; font: 12px/1.4 ui-monospace, monospace; }
pre.text, pre.summary { font: inherit; }
.output, .args, details.output, details.args { background: #8881; padding: .2rem .4rem; }
.output.error, .error { color: var(--del); }
.diff .add { color: var(--add); } .diff .del { color: var(--del); } .diff .hunk { color: var(--muted); }
details > summary { cursor: pointer; color: var(--muted); font-size: 12px; }
.branches { margin: .4rem 0 .4rem 1rem; } .branch { border-left: 2px dashed #a4c; padding-left: .6rem; }
.call .tool { font-weight: 600; }
a.temporal { font-size: 12px; }
form.key input { width: 28rem; max-width: 100%; }
`;

/** `sha256-…` source of an inline script or style, as CSP names it. */
export function cspHash(text: string): string {
  return `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;
}

/**
 * The client script's text. `__name` is defined because a TypeScript loader that keeps function
 * names (tsx does) calls it inside the compiled function; a bundle without that helper ignores it.
 */
export const CLIENT_SCRIPT = `(function(){var __name=function(f){return f};(${viewerClient.toString()})();})();`;

export interface ViewerPage {
  html: string;
  /** The policy: sent as a header by the API, also in the document's meta tag. */
  contentSecurityPolicy: string;
}

/** The page the API serves for `sessionId`: fetches from its own origin only. */
export function livePage(sessionId: string): ViewerPage {
  return page(`Keel session ${sessionId}`, { mode: "live", sessionId }, undefined, "'self'");
}

/** The offline single-file export of a session's view model. */
export function exportPage(model: ViewModel): ViewerPage {
  return page(
    `Keel session ${model.sessionId}`,
    { mode: "export", sessionId: model.sessionId },
    model,
    "'none'",
  );
}

function page(title: string, config: object, model: ViewModel | undefined, connect: string): ViewerPage {
  const policy = [
    "default-src 'none'",
    `script-src ${cspHash(CLIENT_SCRIPT)}`,
    `style-src ${cspHash(VIEWER_STYLE)}`,
    `connect-src ${connect}`,
    "img-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join("; ");
  const data =
    model === undefined ? "" : `<script type="application/json" id="keel-view">${jsonInHtml(model)}</script>`;
  const body = `<div id="app"><noscript>The transcript needs JavaScript.</noscript></div>
<script type="application/json" id="keel-config">${jsonInHtml(config)}</script>
${data}
<script>${CLIENT_SCRIPT}</script>`;
  return {
    html: htmlDocument({ title, policy, style: VIEWER_STYLE, body }),
    contentSecurityPolicy: `${policy}; frame-ancestors 'none'`,
  };
}

/**
 * A whole page: `policy` as its meta Content-Security-Policy, no referrer, `style` inline, the
 * escaped `title`, and `body` as it is (the caller's, already safe HTML).
 */
export function htmlDocument(page: { title: string; policy: string; style: string; body: string }): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${page.policy}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(page.title)}</title>
<style>${page.style}</style>
</head><body>
${page.body}
</body></html>
`;
}

/**
 * JSON safe inside a `<script type="application/json">` element: `<`, `>` and `&` escaped as
 * `\\u003c` etc., so no text of the session can close the element or open a comment; U+2028 and
 * U+2029 escaped too. JSON.parse reads it back unchanged.
 */
export function jsonInHtml(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/>/g, "\\u003e")
    .replace(/&/g, "\\u0026")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
}

/** `text` safe as HTML text and inside a double-quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}
