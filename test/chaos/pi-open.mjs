// Opens each exported session file with pi's own package (@mariozechner/pi-coding-agent) and
// prints, as one JSON array, what pi makes of it: SessionManager.open on a copy (opening may
// rewrite a file), its leaf, its entry count and the context it builds; or the error it threw.
// Run as: node pi-open.mjs <file.jsonl>...
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { SessionManager } from "@mariozechner/pi-coding-agent";

const dir = mkdtempSync(join(tmpdir(), "pi-open-"));
const results = [];
try {
  for (const file of process.argv.slice(2)) {
    try {
      const copy = join(dir, basename(file));
      copyFileSync(file, copy);
      const manager = SessionManager.open(copy, dir);
      const context = manager.buildSessionContext();
      results.push({
        file,
        ok: true,
        leafId: manager.getLeafId(),
        entryCount: manager.getEntries().length,
        messageCount: context.messages.length,
      });
    } catch (error) {
      results.push({ file, ok: false, error: error instanceof Error ? error.message : String(error) });
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(results));
