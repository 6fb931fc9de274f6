/**
 * The session viewer in a real browser (Debian's Chromium through playwright-core): `keel dev`
 * runs its demo, sessions are imported through the API, and the viewer page is checked for
 *
 * - a recorded session with branches, labels and a branch summary;
 * - a tool result carrying `<script>` and `<img onerror>`: shown as text, never run; markup put
 *   into the page anyway is refused by the page's Content-Security-Policy;
 * - a 2,000-entry session: its render time is measured (bench/results/session-viewer-render.json);
 * - a live run: its text appears in the page while the model is still writing;
 * - the offline export (`export?format=html`): opens from a file with the network off and
 *   requests nothing;
 * - the run's link back to the page (its static details in Temporal).
 *
 * Screenshots go to test-artifacts/session-viewer-*.png. Run: `npx jest -c test/e2e/jest.config.js
 * test/e2e/session-viewer.test.ts`.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Client, Connection } from "@temporalio/client";
import type { BrowserContext, Page } from "playwright-core";
import { DEMO_DONE_LINE, DEMO_TENANT } from "../../src/cli/demo";
import { DEV_API_KEY } from "../../src/cli/dev";
import { type KeelDev, printed, projectRoot, startKeelDev } from "../integration/cli/keel-process";
import { chromiumTest, haveChromium, launchChromium } from "./chromium";

const testWithChromium = chromiumTest("the session viewer test");
const STACK_START_TIMEOUT_MS = 150_000;
const UI_TIMEOUT_MS = 30_000;
const ARTIFACTS = join(projectRoot, "test-artifacts");
const RENDER_RESULTS = join(projectRoot, "bench/results/session-viewer-render.json");
const BIG_SESSION_ENTRIES = 2_000;

let dataDir: string;
let profileDir: string;
let dev: KeelDev | undefined;
let browser: BrowserContext | undefined;
let apiUrl: string;
let demoSessionId: string;
let temporalAddress: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "keel-e2e-viewer-"));
  profileDir = mkdtempSync(join(tmpdir(), "keel-chromium-"));
  mkdirSync(ARTIFACTS, { recursive: true });
  if (haveChromium) {
    dev = startKeelDev(dataDir);
    const output = await dev.waitFor(DEMO_DONE_LINE, STACK_START_TIMEOUT_MS);
    apiUrl = printed(output, "API")?.split(" ")[0] as string;
    demoSessionId = printed(output, "S3 session")?.match(/sessions\/([^/]+)\//)?.[1] as string;
    temporalAddress = printed(output, "Temporal")?.split(" ")[0] as string;
    browser = await launchChromium(profileDir);
  }
}, STACK_START_TIMEOUT_MS + 30_000);

afterAll(async () => {
  await browser?.close();
  await dev?.stop("SIGINT");
  rmSync(profileDir, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

async function api(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = { authorization: `Bearer ${DEV_API_KEY}`, ...(init.headers as Record<string, string>) };
  return fetch(`${apiUrl}${path}`, { ...init, headers });
}

/** Imports a pi session file; returns the new session's id. */
async function importSession(jsonl: string): Promise<string> {
  const response = await api("/v1/sessions/import", {
    method: "POST",
    headers: { "content-type": "application/x-ndjson" },
    body: jsonl,
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { sessionId: string }).sessionId;
}

/** Opens a session's viewer page; enters the key when the page asks for it. */
async function openViewer(page: Page, sessionId: string): Promise<void> {
  await page.goto(`${apiUrl}/view/sessions/${sessionId}`);
  const key = page.locator("form.key input");
  const header = page.locator("header h1");
  await Promise.race([key.waitFor(), header.waitFor()]);
  if (await key.isVisible()) {
    await key.fill(DEV_API_KEY);
    await page.getByRole("button", { name: "Show session" }).click();
  }
  await header.waitFor();
}

async function withScreenshotOnFailure(page: Page, name: string, check: () => Promise<void>): Promise<void> {
  try {
    await check();
  } catch (error) {
    await page.screenshot({ path: join(ARTIFACTS, `session-viewer-${name}-failure.png`) });
    throw error;
  }
}

const BASE_TIME = Date.parse("2026-01-05T10:00:00.000Z");
const USAGE = {
  input: 100,
  output: 20,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 120,
  cost: { input: 0.0003, output: 0.0003, cacheRead: 0, cacheWrite: 0, total: 0.0006 },
};

/** A version 3 session file of `entries` (objects without id/parentId/timestamp), one linear path. */
function sessionFile(entries: Record<string, unknown>[]): string {
  const header = { type: "session", version: 3, id: "fixture", timestamp: new Date(BASE_TIME).toISOString() };
  const lines = entries.map((entry, index) => ({
    ...entry,
    id: `e${index}`,
    parentId: index === 0 ? null : `e${index - 1}`,
    timestamp: new Date(BASE_TIME + index * 1000).toISOString(),
  }));
  return `${[header, ...lines].map((line) => JSON.stringify(line)).join("\n")}\n`;
}

function user(text: string) {
  return {
    type: "message",
    message: { role: "user", content: [{ type: "text", text }], timestamp: BASE_TIME },
  };
}

function assistant(content: unknown[], stopReason = "stop") {
  return {
    type: "message",
    message: {
      role: "assistant",
      content,
      api: "openai-completions",
      provider: "local",
      model: "local-chat",
      usage: USAGE,
      stopReason,
      timestamp: BASE_TIME,
    },
  };
}

function toolResult(toolCallId: string, toolName: string, text: string) {
  return {
    type: "message",
    message: {
      role: "toolResult",
      toolCallId,
      toolName,
      content: [{ type: "text", text }],
      isError: false,
      timestamp: BASE_TIME,
    },
  };
}

const HOSTILE_OUTPUT =
  "</pre><script>window.__pwned = 'script'</script><img src=x onerror=\"window.__pwned = 'img'\">";

testWithChromium(
  "a recorded session with branches shows its tree, labels and branch summary",
  async () => {
    const sessionId = await importSession(
      readFileSync(join(projectRoot, "test/fixtures/sessions/branches-labels.jsonl"), "utf8"),
    );
    const page = await (browser as BrowserContext).newPage();
    page.setDefaultTimeout(UI_TIMEOUT_MS);
    await withScreenshotOnFailure(page, "branches", async () => {
      await openViewer(page, sessionId);
      // The path to the leaf: the branch summary and the label where they happened.
      await page.locator("#entry-a000000d").getByText("The user asked to delete src/tools").waitFor();
      await page.locator("#entry-a0000006 .label").getByText("listed").waitFor();
      expect(await page.locator("#entry-a0000009").count()).toBe(0);
      // The abandoned branch, built when opened.
      await page.locator("details.branches > summary").first().click();
      await page.locator("#entry-a0000009").getByText("rm -rf src/tools").waitFor();
      await page.locator("#entry-a0000009").scrollIntoViewIfNeeded();
      await page.screenshot({ path: join(ARTIFACTS, "session-viewer-branches.png") });
    });
    await page.close();
  },
  STACK_START_TIMEOUT_MS,
);

testWithChromium(
  "markup in a tool result is shown as text and never runs; the CSP refuses injected markup too",
  async () => {
    const sessionId = await importSession(
      sessionFile([
        user("run the build"),
        assistant(
          [{ type: "toolCall", id: "call_1", name: "bash", arguments: { command: "make" } }],
          "toolUse",
        ),
        toolResult("call_1", "bash", HOSTILE_OUTPUT),
        assistant([{ type: "text", text: "<b onmouseover=alert(1)>done</b>" }]),
      ]),
    );
    const page = await (browser as BrowserContext).newPage();
    page.setDefaultTimeout(UI_TIMEOUT_MS);
    const dialogs: string[] = [];
    page.on("dialog", (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await withScreenshotOnFailure(page, "hostile", async () => {
      await openViewer(page, sessionId);
      await page.getByText(HOSTILE_OUTPUT).waitFor();
      await page.getByText("<b onmouseover=alert(1)>done</b>").hover();
      expect(await page.evaluate("window.__pwned")).toBeUndefined();
      expect(await page.locator("img").count()).toBe(0);
      await page.screenshot({ path: join(ARTIFACTS, "session-viewer-hostile.png") });

      // Defence in depth: markup inserted past the renderer is refused by the policy.
      const violations = await page.evaluate(`new Promise((resolve) => {
        const seen = [];
        document.addEventListener("securitypolicyviolation", (event) => seen.push(event.violatedDirective));
        document.body.insertAdjacentHTML("beforeend", ${JSON.stringify(HOSTILE_OUTPUT)});
        const script = document.createElement("script");
        script.textContent = "window.__pwned = 'inline'";
        document.body.append(script);
        setTimeout(() => resolve(seen), 500);
      })`);
      expect(await page.evaluate("window.__pwned")).toBeUndefined();
      expect(violations).toEqual(expect.arrayContaining(["script-src-elem", "img-src"]));
      expect(dialogs).toEqual([]);
    });
    await page.close();
  },
  STACK_START_TIMEOUT_MS,
);

testWithChromium(
  `a ${BIG_SESSION_ENTRIES}-entry session renders, and how long it takes is recorded`,
  async () => {
    const entries: Record<string, unknown>[] = [];
    const output = Array.from({ length: 60 }, (_, line) => `line ${line} of a long build log`).join("\n");
    for (let turn = 0; entries.length < BIG_SESSION_ENTRIES; turn++) {
      entries.push(
        user(`step ${turn}`),
        assistant(
          [
            { type: "thinking", thinking: `thinking about step ${turn}` },
            {
              type: "toolCall",
              id: `call_${turn}`,
              name: "bash",
              arguments: { command: `make step-${turn}` },
            },
          ],
          "toolUse",
        ),
        toolResult(`call_${turn}`, "bash", output),
        assistant([{ type: "text", text: `Step ${turn} built.` }]),
      );
    }
    const sessionId = await importSession(sessionFile(entries.slice(0, BIG_SESSION_ENTRIES)));
    const page = await (browser as BrowserContext).newPage();
    page.setDefaultTimeout(UI_TIMEOUT_MS);
    await withScreenshotOnFailure(page, "large", async () => {
      await openViewer(page, sessionId);
      const started = Date.now();
      await page.reload();
      await page.locator("header h1").waitFor();
      const loadMs = Date.now() - started;
      const renderMs = Number(await page.locator("body").getAttribute("data-render-ms"));
      expect(Number(await page.locator("body").getAttribute("data-entries"))).toBe(BIG_SESSION_ENTRIES);
      await page.locator(`#entry-e${BIG_SESSION_ENTRIES - 1}`).scrollIntoViewIfNeeded();
      await page
        .locator(`#entry-e${BIG_SESSION_ENTRIES - 1}`)
        .getByText("Step 499 built.")
        .waitFor();
      writeFileSync(
        RENDER_RESULTS,
        `${JSON.stringify(
          {
            what: "session viewer, Chromium headless: building the DOM of a session (renderMs) and reload to rendered page, fetch of the view included (loadMs)",
            entries: BIG_SESSION_ENTRIES,
            renderMs,
            loadMs,
            measuredAt: new Date().toISOString(),
          },
          null,
          2,
        )}\n`,
      );
      process.stdout.write(
        `session viewer: ${BIG_SESSION_ENTRIES} entries rendered in ${renderMs} ms (load ${loadMs} ms)\n`,
      );
      expect(renderMs).toBeLessThan(5_000);
      await page.screenshot({ path: join(ARTIFACTS, "session-viewer-large.png") });
    });
    await page.close();
  },
  STACK_START_TIMEOUT_MS,
);

testWithChromium(
  "a live run's text appears while the model writes it, and its run links back to the page",
  async () => {
    const words = Array.from({ length: 80 }, (_, index) => `word${index}`).join(" ");
    const sent = await api(`/v1/sessions/${demoSessionId}/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text: `please echo ${words}` }),
    });
    expect(sent.status).toBe(202);
    const page = await (browser as BrowserContext).newPage();
    page.setDefaultTimeout(UI_TIMEOUT_MS);
    await withScreenshotOnFailure(page, "live", async () => {
      await openViewer(page, demoSessionId);
      // Part of the answer is in the live panel before the whole of it is stored.
      await page
        .locator("#live pre")
        .getByText(/word\d+/)
        .first()
        .waitFor();
      const partial = (await page.locator("#live pre").first().textContent()) ?? "";
      expect(partial).not.toContain("word79");
      await page.locator("#live").scrollIntoViewIfNeeded();
      await page.screenshot({ path: join(ARTIFACTS, "session-viewer-live.png") });
      // Once stored, the answer is in the transcript and the live copy is gone.
      await page
        .locator("main article.kind-assistant")
        .getByText(/word79/)
        .last()
        .waitFor();
      await page.getByText("status: run ended").waitFor();
      expect(await page.locator("#live pre").count()).toBe(0);
      // The demo's edit shows as a diff; model and tool calls link to the Temporal UI.
      await page.locator("pre.diff .add").first().waitFor();
      const href = await page.locator("a.temporal").first().getAttribute("href");
      expect(href).toContain(encodeURIComponent(`"keel-run/${DEMO_TENANT}/${demoSessionId}"`));
    });
    await page.close();

    // From the Temporal UI back to the page: the run's static details link to it.
    const connection = await Connection.connect({ address: temporalAddress });
    try {
      const client = new Client({ connection });
      const description = await client.workflow
        .getHandle(`keel-run/${DEMO_TENANT}/${demoSessionId}`)
        .describe();
      expect(await description.staticDetails()).toContain(`${apiUrl}/view/sessions/${demoSessionId}`);
    } finally {
      await connection.close();
    }
  },
  STACK_START_TIMEOUT_MS,
);

testWithChromium(
  "the HTML export opens from a file with the network off and requests nothing",
  async () => {
    const sessionId = await importSession(
      readFileSync(join(projectRoot, "test/fixtures/sessions/branches-labels.jsonl"), "utf8"),
    );
    const response = await api(`/v1/sessions/${sessionId}/export?format=html`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-security-policy")).toContain("connect-src 'none'");
    const file = join(dataDir, `${sessionId}.html`);
    writeFileSync(file, await response.text());

    const context = browser as BrowserContext;
    const page = await context.newPage();
    page.setDefaultTimeout(UI_TIMEOUT_MS);
    const requests: string[] = [];
    page.on("request", (request) => requests.push(request.url()));
    await context.setOffline(true);
    try {
      await withScreenshotOnFailure(page, "export", async () => {
        await page.goto(pathToFileURL(file).href);
        await page.locator("#entry-a000000d").getByText("The user asked to delete src/tools").waitFor();
        // Nothing asks for a key: the data is in the file.
        expect(await page.locator("form.key").count()).toBe(0);
        expect(requests.filter((url) => !url.startsWith("file:"))).toEqual([]);
        await page.screenshot({ path: join(ARTIFACTS, "session-viewer-export.png") });
      });
    } finally {
      await context.setOffline(false);
      await page.close();
    }
  },
  STACK_START_TIMEOUT_MS,
);
