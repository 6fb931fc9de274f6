/** What a replay forks and sends (`planReplay`): from a user message, or from any other entry. */
import { ProblemError } from "../../../src/api/problems";
import { planReplay } from "../../../src/api/replay-plan";
import type { AgentMessage, UserMessage } from "../../../src/core/messages";
import { createMessageEntry } from "../../../src/core/session-entries";
import { indexSession } from "../../../src/core/session-tree";
import type { SessionEntry } from "../../../src/core/session-types";

const at = (id: string, parentId: string | null) => ({ id, parentId, timestamp: "2026-01-01T00:00:00.000Z" });
const user = (id: string, parentId: string | null, content: UserMessage["content"]): SessionEntry =>
  createMessageEntry(at(id, parentId), { role: "user", content, timestamp: 0 } as AgentMessage);
const assistant = (id: string, parentId: string): SessionEntry =>
  createMessageEntry(at(id, parentId), {
    role: "assistant",
    content: [{ type: "text", text: "ok" }],
    api: "openai-completions",
    provider: "local",
    model: "local-chat",
    usage: {
      input: 1,
      output: 1,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 2,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: "stop",
    timestamp: 0,
  });

// u1 → a1 → u2 → a2, and a branch a1 → u3 (abandoned: the leaf is a2, written last).
const index = indexSession([
  user("u1", null, "first"),
  assistant("a1", "u1"),
  user("u3", "a1", "abandoned"),
  user("u2", "a1", [{ type: "text", text: "second" }]),
  assistant("a2", "u2"),
]);

function refusal(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    if (error instanceof ProblemError) return error.slug;
    throw error;
  }
  return undefined;
}

test("a user message: forks at its parent and sends its text, or the message given", () => {
  expect(planReplay(index, "u2")).toEqual({ forkAt: "a1", question: "second" });
  expect(planReplay(index, "u2", "instead")).toEqual({ forkAt: "a1", question: "instead" });
  // The first message: the forks hold no entries.
  expect(planReplay(index, "u1")).toEqual({ forkAt: null, question: "first" });
});

test("another entry: forks at it, sends the message given or the next user message on the leaf's path", () => {
  expect(planReplay(index, "a1", "try this")).toEqual({ forkAt: "a1", question: "try this" });
  // u3 follows a1 too, but on a branch the leaf is not on.
  expect(planReplay(index, "a1")).toEqual({ forkAt: "a1", question: "second" });
});

test("nothing to send is 422 no-replay-message; an unknown entry is entry-not-found", () => {
  expect(refusal(() => planReplay(index, "a2"))).toBe("no-replay-message");
  expect(refusal(() => planReplay(index, "nope"))).toBe("entry-not-found");
  const imagesOnly = indexSession([user("u1", null, [{ type: "image", data: "", mimeType: "image/png" }])]);
  expect(refusal(() => planReplay(imagesOnly, "u1"))).toBe("no-replay-message");
});
