// Writes a session file with pi's own SessionManager (branch, label, compaction, custom
// message, model and thinking changes) and prints {file, leafId, context} as JSON.
// Run as: node pi-write.mjs <directory>
import { SessionManager } from "@mariozechner/pi-coding-agent";

const [dir] = process.argv.slice(2);
const usage = {
  input: 10,
  output: 5,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 15,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};
const assistant = (content, stopReason = "stop") => ({
  role: "assistant",
  content,
  api: "anthropic-messages",
  provider: "anthropic",
  model: "claude-sonnet-4-5",
  usage,
  stopReason,
  timestamp: 1767600000000,
});
const manager = SessionManager.create("/work/project", dir);
manager.appendModelChange("anthropic", "claude-sonnet-4-5");
manager.appendThinkingLevelChange("low");
const first = manager.appendMessage({ role: "user", content: "Read a.ts", timestamp: 1767600000001 });
manager.appendMessage(
  assistant([{ type: "toolCall", id: "toolu_1", name: "read", arguments: { path: "a.ts" } }], "toolUse"),
);
manager.appendMessage({
  role: "toolResult",
  toolCallId: "toolu_1",
  toolName: "read",
  content: [{ type: "text", text: "const a = 1;" }],
  isError: false,
  timestamp: 1767600000002,
});
const answered = manager.appendMessage(assistant([{ type: "text", text: "a is 1." }]));
manager.appendLabelChange(first, "start");
manager.appendMessage({ role: "user", content: "Now b.ts", timestamp: 1767600000003 });
manager.appendMessage(assistant([{ type: "text", text: "b is missing." }]));
manager.branchWithSummary(answered, "Looked for b.ts; it does not exist.", {
  readFiles: [],
  modifiedFiles: [],
});
manager.appendCustomMessageEntry("hint", [{ type: "text", text: "Prefer c.ts." }], true, { source: "test" });
manager.appendMessage({ role: "user", content: "Read c.ts", timestamp: 1767600000004 });
manager.appendCompaction("## Goal\nRead files.", answered, 1234, { readFiles: ["a.ts"], modifiedFiles: [] });
manager.appendMessage(
  assistant([
    { type: "thinking", thinking: "c.ts is small", thinkingSignature: "sig" },
    { type: "text", text: "c is 3." },
  ]),
);
manager.appendSessionInfo("pi written");
process.stdout.write(
  JSON.stringify({
    file: manager.getSessionFile(),
    leafId: manager.getLeafId(),
    context: manager.buildSessionContext(),
  }),
);
