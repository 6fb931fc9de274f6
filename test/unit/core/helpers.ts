import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type {
  AgentMessage,
  AssistantMessage,
  Message,
  ToolResultMessage,
  UserMessage,
} from "../../../src/core/messages";
import { emptyUsage } from "../../../src/core/usage";

export const SESSION_FIXTURES = join(__dirname, "../../fixtures/sessions");
export const PI_FIXTURES = join(__dirname, "../../fixtures/pi-sessions");

export function readFixture(dir: string, name: string): string {
  return readFileSync(join(dir, name), "utf8");
}

/** Run one of the ESM helpers that drive pi's own code (jest itself cannot load pi's ESM build). */
export function runPiHelper<T>(
  script: "pi-context.mjs" | "pi-write.mjs" | "pi-compaction.mjs",
  args: string[],
): T {
  const out = execFileSync(process.execPath, [join(__dirname, "support", script), ...args], {
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
  });
  return JSON.parse(out) as T;
}

/** What survives JSON (pi's output arrives as JSON): undefined keys vanish, NaN becomes null. */
export function asJson<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

export const user = (text: string, timestamp = 1): UserMessage => ({
  role: "user",
  content: text,
  timestamp,
});

export const assistant = (
  content: AssistantMessage["content"],
  extra: Partial<AssistantMessage> = {},
): AssistantMessage => ({
  role: "assistant",
  content,
  api: "anthropic-messages",
  provider: "anthropic",
  model: "claude-sonnet-4-5",
  usage: emptyUsage(),
  stopReason: content.some((block) => block.type === "toolCall") ? "toolUse" : "stop",
  timestamp: 2,
  ...extra,
});

export const toolCall = (id: string, name = "read", args: Record<string, unknown> = { path: "a.ts" }) =>
  ({ type: "toolCall", id, name, arguments: args }) as const;

export const toolResult = (toolCallId: string, text = "ok", toolName = "read"): ToolResultMessage => ({
  role: "toolResult",
  toolCallId,
  toolName,
  content: [{ type: "text", text }],
  isError: false,
  timestamp: 3,
});

export function textOf(message: AgentMessage | Message): string {
  if (!("content" in message)) return "";
  const content = message.content;
  if (typeof content === "string") return content;
  return content.map((block) => ("text" in block ? block.text : "")).join("");
}
