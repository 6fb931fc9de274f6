/** The CLI's live output: text as it arrives, a retry's reset, bash output as it grows. */

import { EventPrinter, unseenOutput } from "../../../src/cli/render";
import type { LiveEvent } from "../../../src/core/events";
import type { AssistantMessage, ToolResultMessage } from "../../../src/core/messages";

function printer() {
  let text = "";
  const out = new EventPrinter({ write: (chunk) => (text += chunk), isTTY: false }, false);
  return { out, text: () => text };
}

const delta = (delta: string, attempt = 1, contentIndex = 0): LiveEvent => ({
  type: "message_update",
  entryId: "a1",
  attempt,
  assistantMessageEvent: { type: "text_delta", contentIndex, delta },
});

const message: AssistantMessage = {
  role: "assistant",
  content: [{ type: "text", text: "Hello\nworld" }],
  api: "openai-completions",
  provider: "local",
  model: "m",
  usage: {
    input: 1,
    output: 2,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 3,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  },
  stopReason: "stop",
  timestamp: 0,
};

test("streamed text is written as it comes and not repeated when the message ends", () => {
  const { out, text } = printer();
  out.live(delta("Hel"));
  out.live(delta("lo\nwor"));
  out.live(delta("ld"));
  out.print({ type: "message_end", role: "assistant", entryId: "a1", message, seq: 5 });
  expect(text()).toBe("  ● Hello\n    world\n    1 in / 2 out tokens · $0.0000 (run total $0.0000)\n");
});

test("a reset says the call is retried, and the retried text follows", () => {
  const { out, text } = printer();
  out.live(delta("Hel"));
  out.live({ type: "message_update", entryId: "a1", attempt: 2, assistantMessageEvent: { type: "reset" } });
  out.live(delta("Hello", 2));
  expect(text()).toBe(
    "  ● Hel\n  ↻ the model call is retried (attempt 2); its answer starts again\n  ● Hello",
  );
});

test("bash output: only what is new is written, also when the update lost its head", () => {
  expect(unseenOutput("a\nb\n", "a\nb\nc\n")).toBe("c\n");
  expect(unseenOutput(`${"x".repeat(300)}END`, `${"x".repeat(250)}ENDmore`)).toBe("more");
  expect(unseenOutput("abc", "zzz")).toBe("…zzz");
  const { out, text } = printer();
  const update = (partial: string): LiveEvent => ({
    type: "tool_execution_update",
    toolCallId: "c1",
    toolName: "bash",
    attempt: 1,
    partial,
  });
  out.live(update("line1\n"));
  out.live(update("line1\nline2\n"));
  expect(text()).toBe("    │ line1\n    │ line2\n");
});

describe("a tool call ends with what was stored", () => {
  const end = (result: Partial<ToolResultMessage> & { text: string }, isError = false) => ({
    type: "tool_execution_end" as const,
    toolCallId: "c1",
    toolName: "bash",
    state: "completed" as const,
    isError,
    seq: 9,
    result: {
      role: "toolResult" as const,
      toolCallId: "c1",
      toolName: "bash",
      content: [{ type: "text" as const, text: result.text }],
      isError: result.isError ?? false,
      timestamp: 0,
    },
  });
  const update = (partial: string): LiveEvent => ({
    type: "tool_execution_update",
    toolCallId: "c1",
    toolName: "bash",
    attempt: 1,
    partial,
  });

  test("the output's last batch, which never came live, is printed before the outcome", () => {
    const { out, text } = printer();
    out.live(update("hello from bash\n"));
    out.print(end({ text: "hello from bash\nREADME.md\nsrc\n" }));
    expect(text()).toBe("    │ hello from bash\n    │ README.md\n    │ src\n  ✓ bash completed\n");
  });

  test("live output shown without its newline continues on the next line, with no blank line", () => {
    const { out, text } = printer();
    out.live(update("hello from bash"));
    out.print(end({ text: "hello from bash\nsecond\n" }));
    expect(text()).toBe("    │ hello from bash\n    │ second\n  ✓ bash completed\n");
  });

  test("read after the fact (no live output), the stored output is printed whole", () => {
    const { out, text } = printer();
    out.print(end({ text: "one\ntwo" }));
    expect(text()).toBe("    │ one\n    │ two\n  ✓ bash completed\n");
  });

  test("a refused or aborted call says it failed and why, whatever the event's own flag", () => {
    const { out, text } = printer();
    out.print(end({ text: "Tool call denied by policy: bash is denied for this run", isError: true }));
    expect(text()).toContain("  ✗ bash failed: Tool call denied by policy: bash is denied for this run\n");
    const aborted = printer();
    aborted.out.print(end({ text: "partial\nCommand aborted", isError: true }, false));
    expect(aborted.text()).toContain("  ✗ bash failed: Command aborted\n");
    expect(aborted.text()).not.toContain("✓");
  });
});

const bashStart = {
  seq: 3,
  type: "tool_execution_start",
  toolCallId: "c1",
  toolName: "bash",
  ranOn: "worker",
} as const;
const tick = (partial: string, attempt = 1): LiveEvent => ({
  type: "tool_execution_update",
  toolCallId: "c1",
  toolName: "bash",
  attempt,
  partial,
});
const lostWorker = {
  type: "waiting",
  on: "worker",
  attempt: 1,
  staleUpTo: 1,
  since: 0,
  message: "waiting for a worker: the worker running a tool call stopped reporting",
} as const;

test("a takeover: the wait is said once, and the lost attempt's output read after it is not shown as new", () => {
  const { out, text } = printer();
  out.print(bashStart);
  out.live(tick("tick 1\n"));
  out.live(lostWorker);
  out.live(lostWorker);
  // Published before the worker died, read only once another worker took the run over.
  out.live(tick("tick 1\ntick 2\n"));
  expect(text()).toBe(`  ⚙ bash\n    │ tick 1\n  … ${lostWorker.message}\n`);
});

test("a call tried again says so, and its output starts again", () => {
  const { out, text } = printer();
  out.print(bashStart);
  out.live(tick("[waiting for environment `e`: no runner has taken this call yet]"));
  out.live(tick("[waiting for environment `e`: no runner has taken this call yet]", 2));
  expect(text()).toBe(
    "  ⚙ bash\n    │ [waiting for environment `e`: no runner has taken this call yet]\n  ↻ bash is tried again (attempt 2)\n    │ [waiting for environment `e`: no runner has taken this call yet]",
  );
});
