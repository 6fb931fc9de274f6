// Prints, as JSON, pi's compaction planning over the root→leaf path of a session file:
// cut points for several keepRecentTokens budgets, per-message token estimates, the serialized
// conversation of the path, and prepareBranchEntries over the path with several budgets.
// Run as: node pi-compaction.mjs <file.jsonl>
import { readFileSync } from "node:fs";
import {
  buildSessionContext,
  convertToLlm,
  estimateTokens,
  findCutPoint,
  migrateSessionEntries,
  parseSessionEntries,
  prepareBranchEntries,
  serializeConversation,
} from "@mariozechner/pi-coding-agent";

const [file] = process.argv.slice(2);
const fileEntries = parseSessionEntries(readFileSync(file, "utf8"));
migrateSessionEntries(fileEntries);
const entries = fileEntries.filter((e) => e.type !== "session");
const byId = new Map(entries.map((e) => [e.id, e]));
const path = [];
for (let e = entries[entries.length - 1]; e; e = e.parentId ? byId.get(e.parentId) : undefined)
  path.unshift(e);
const budgets = [0, 100, 1000, 5000, 20000, 50000, 10_000_000];
const branchBudgets = [0, 500, 5000, 50000];
const messages = buildSessionContext(entries).messages;
process.stdout.write(
  JSON.stringify({
    pathIds: path.map((e) => e.id),
    cuts: budgets.map((k) => findCutPoint(path, 0, path.length, k)),
    estimates: messages.map((m) => estimateTokens(m)),
    serialized: serializeConversation(convertToLlm(messages)),
    branches: branchBudgets.map((b) => {
      const r = prepareBranchEntries(path, b);
      return {
        count: r.messages.length,
        totalTokens: r.totalTokens,
        read: [...r.fileOps.read].sort(),
        edited: [...r.fileOps.edited].sort(),
      };
    }),
  }),
);
