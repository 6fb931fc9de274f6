/**
 * Debian's Chromium driven by playwright-core (nothing is downloaded): how the browser tests
 * launch it. The tests skip, with a message, when /usr/bin/chromium is missing.
 */
import { existsSync } from "node:fs";
import { type BrowserContext, chromium } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export const haveChromium = existsSync(CHROMIUM);

/** `test`, or `test.skip` (after saying why) when Chromium is not installed. */
export function chromiumTest(suite: string): jest.It {
  if (haveChromium) return test;
  process.stderr.write(`Skipping ${suite}: ${CHROMIUM} is missing (apt-get install -y chromium)\n`);
  return test.skip;
}

/** A browser with a fresh profile in `profileDir` (playwright passes it as --user-data-dir). */
export function launchChromium(profileDir: string): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
    viewport: { width: 1600, height: 1400 },
  });
}
