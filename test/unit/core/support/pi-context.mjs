// Prints, as JSON, what pi's own code makes of a session file: the context from
// parseSessionEntries + migrateSessionEntries + buildSessionContext, the same through
// SessionManager.open (on a copy, because opening an old file rewrites it), and the LLM
// messages from pi's convertToLlm. Run as: node pi-context.mjs <file.jsonl> [leafId]
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  buildSessionContext,
  convertToLlm,
  migrateSessionEntries,
  parseSessionEntries,
  SessionManager,
} from "@mariozechner/pi-coding-agent";

const [file, leafId] = process.argv.slice(2);
const fileEntries = parseSessionEntries(readFileSync(file, "utf8"));
migrateSessionEntries(fileEntries);
const entries = fileEntries.filter((e) => e.type !== "session");
const context = buildSessionContext(entries, leafId);

const dir = mkdtempSync(join(tmpdir(), "pi-context-"));
try {
  const copy = join(dir, "session.jsonl");
  copyFileSync(file, copy);
  const manager = SessionManager.open(copy, dir);
  const managerContext = manager.buildSessionContext();
  process.stdout.write(
    JSON.stringify({
      context,
      llm: convertToLlm(context.messages),
      managerContext,
      managerLeafId: manager.getLeafId(),
      entryCount: entries.length,
    }),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
