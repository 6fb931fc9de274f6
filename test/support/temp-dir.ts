/** A temporary directory per test, for tests that work on real folders. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Registers hooks that give each test of the calling file a fresh directory under the system's
 * temporary folder (named `{prefix}…`) and remove it after the test; call it at the file's top
 * level, before hooks that use the directory. Returns a getter for the current test's directory.
 */
export function tempDirPerTest(prefix: string): () => string {
  let dir = "";
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), prefix));
  });
  // Retried: a process a test killed may still be changing the tree while it goes.
  afterEach(() => rmSync(dir, { recursive: true, force: true, maxRetries: 5 }));
  return () => dir;
}
