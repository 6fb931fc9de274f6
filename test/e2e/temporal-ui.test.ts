/**
 * The Temporal web UI in a real browser: `keel dev` runs its demo, then headless Chromium (Debian's
 * `chromium`, driven by playwright-core; nothing is downloaded) opens the UI, finds the demo run
 * in the workflow list filtered by its `KeelStatus`, opens the run's timeline by the printed link,
 * and checks that the run's activity summaries and its current details (outcome and why first)
 * are shown. A screenshot goes to test-artifacts/temporal-ui.png.
 *
 * Run: `npx jest -c test/e2e/jest.config.js`. Skips (with a message) when /usr/bin/chromium is
 * missing: `apt-get install -y chromium`.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { DEMO_DONE_LINE, DEMO_TENANT, temporalUiListLink } from "../../src/cli/demo";
import { type KeelDev, printed, projectRoot, startKeelDev } from "../integration/cli/keel-process";
import { chromiumTest, launchChromium } from "./chromium";

const STACK_START_TIMEOUT_MS = 150_000;
const UI_TIMEOUT_MS = 30_000;
/** The run page with its activity timeline. */
const SCREENSHOT = join(projectRoot, "test-artifacts/temporal-ui.png");
/** The run page's "User Metadata" tab with the current details. */
const DETAILS_SCREENSHOT = join(projectRoot, "test-artifacts/temporal-ui-details.png");
const FAILURE_SCREENSHOT = join(projectRoot, "test-artifacts/temporal-ui-failure.png");

const testWithChromium = chromiumTest("the Temporal UI test");

let dataDir: string;
let profileDir: string;
let dev: KeelDev | undefined;
let browser: BrowserContext | undefined;

beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), "keel-e2e-"));
  profileDir = mkdtempSync(join(tmpdir(), "keel-chromium-"));
});

afterAll(async () => {
  await browser?.close();
  await dev?.stop("SIGINT");
  rmSync(profileDir, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

testWithChromium(
  "the demo run shows its activity summaries and current details in the Temporal UI",
  async () => {
    dev = startKeelDev(dataDir);
    const output = await dev.waitFor(DEMO_DONE_LINE, STACK_START_TIMEOUT_MS);
    const uiUrl = printed(output, "Temporal UI") as string;
    const runLink = output.match(/Temporal UI\s+(http:\/\/\S+\/timeline)/)?.[1] as string;
    const sessionId = printed(output, "S3 session")?.match(/sessions\/([^/]+)\//)?.[1] as string;
    expect(runLink).toBeDefined();
    expect(sessionId).toBeDefined();
    const workflowId = `keel-run/${DEMO_TENANT}/${sessionId}`;

    // A fresh profile (--user-data-dir) per run: playwright passes it for a persistent context.
    browser = await launchChromium(profileDir);
    const page = await browser.newPage();
    page.setDefaultTimeout(UI_TIMEOUT_MS);

    mkdirSync(join(projectRoot, "test-artifacts"), { recursive: true });
    try {
      await checkRunPage(page, uiUrl, workflowId, runLink);
    } catch (error) {
      // The screenshot shows what the UI displayed instead.
      await page.screenshot({ path: FAILURE_SCREENSHOT, fullPage: true });
      throw error;
    }
    expect(existsSync(SCREENSHOT)).toBe(true);
  },
  STACK_START_TIMEOUT_MS + 60_000,
);

async function checkRunPage(page: Page, uiUrl: string, workflowId: string, runLink: string): Promise<void> {
  // The workflow list filtered by the run's outcome (KeelStatus; Temporal says Completed for
  // every run that ended) names the demo run; filtered by another outcome, it does not.
  const listWith = (status: string) =>
    temporalUiListLink(uiUrl, "default", `KeelStatus = "${status}" AND WorkflowId = "${workflowId}"`);
  await page.goto(listWith("completed"));
  await page.getByRole("link", { name: workflowId }).first().waitFor();
  await page.goto(listWith("failed"));
  await page
    .getByText(/No Workflows/i)
    .first()
    .waitFor();
  expect(await page.getByRole("link", { name: workflowId }).count()).toBe(0);

  // The printed link opens the run's timeline.
  await page.goto(runLink);

  // The run's timeline labels its activities with their summaries: model turns and tool calls.
  for (const summary of [
    "llm local-chat turn 1",
    "ls: .",
    "read: README.md",
    "edit: README.md",
    "llm local-chat turn 4",
  ]) {
    await page.getByText(summary).first().waitFor();
  }
  expect(page.url()).toContain(encodeURIComponent(workflowId));
  await page.screenshot({ path: SCREENSHOT, fullPage: true });

  // The current details the run published when it ended (the UI's "User Metadata" tab).
  await page.getByText("User Metadata", { exact: true }).first().click();
  await page.getByText("Current Details", { exact: true }).first().waitFor();
  // The UI renders the Markdown of the details in a sandboxed frame.
  const details = /completed\s*\([^)]+\)\s*·\s*turn 4\s*·\s*3 tool calls\s*·\s*\d+ tokens\s*·\s*\$\d+\.\d{4}/;
  const deadline = Date.now() + UI_TIMEOUT_MS;
  let texts = await allFrameTexts(page);
  while (!texts.some((text) => details.test(text)) && Date.now() < deadline) {
    await page.waitForTimeout(250);
    texts = await allFrameTexts(page);
  }
  expect(texts.join("\n")).toMatch(details);
  await page.screenshot({ path: DETAILS_SCREENSHOT, fullPage: true });
}

/** The text of the page and of every frame in it. */
async function allFrameTexts(page: Page): Promise<string[]> {
  return Promise.all(
    page.frames().map((frame) =>
      frame
        .locator("body")
        .textContent()
        .then((text) => text ?? "")
        .catch(() => ""),
    ),
  );
}
