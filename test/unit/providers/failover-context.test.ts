/**
 * The context a turn's model is given after a failover: a conversation started on one vendor goes
 * on on another and back, built from the session's entries (the `model_change` entries included)
 * as the LLM turn activity builds it, checked on the request bodies the real SDKs send.
 */
import { modelMessages } from "../../../src/activities/conversation";
import type { AssistantMessage } from "../../../src/core/messages";
import { createMessageEntry, createModelChangeEntry } from "../../../src/core/session-entries";
import type { SessionEntry } from "../../../src/core/session-types";
import { emptyUsage } from "../../../src/core/usage";
import { type LocalLlmServer, startLocalLlmServer } from "../../../src/providers/local-server";
import { resolveModel } from "../../../src/providers/models";
import { createProvider } from "../../../src/providers/registry";
import { toAnthropicToolId } from "../../../src/providers/tool-call-ids";

let server: LocalLlmServer;
beforeAll(async () => {
  server = await startLocalLlmServer({ journalBodies: true });
});
afterAll(() => server.close());

const IMAGE = { type: "image" as const, data: "iVBORw0KGgo=", mimeType: "image/png" };
/** A Responses-style id no Anthropic id pattern accepts as it is. */
const CHAT_CALL_ID = "call_9|fc_x+y/z=";

function provider() {
  return createProvider({
    openai: { apiKey: "k", baseURL: server.openaiBaseURL },
    anthropic: { apiKey: "k", baseURL: server.anthropicBaseURL },
    env: {},
  });
}

/** A session as a failover leaves it: started on A (Anthropic), switched to B (Chat Completions). */
function session(): SessionEntry[] {
  const entries: SessionEntry[] = [];
  const at = () => ({
    id: `e${entries.length}`,
    parentId: entries.at(-1)?.id ?? null,
    timestamp: new Date(1_000 + entries.length).toISOString(),
  });
  const answer = (model: string, api: string, content: AssistantMessage["content"]): AssistantMessage => ({
    role: "assistant",
    content,
    api,
    provider: "local",
    model,
    usage: emptyUsage(),
    stopReason: "toolUse",
    timestamp: 1,
  });
  const result = (toolCallId: string, text: string) =>
    createMessageEntry(at(), {
      role: "toolResult",
      toolCallId,
      toolName: "read",
      content: [{ type: "text", text }],
      isError: false,
      timestamp: 1,
    });
  entries.push(
    createMessageEntry(at(), {
      role: "user",
      content: [{ type: "text", text: "what is in this picture and in a?" }, IMAGE],
      timestamp: 1,
    }),
  );
  entries.push(
    createMessageEntry(
      at(),
      answer("local-anthropic", "anthropic-messages", [
        { type: "thinking", thinking: "Look at a first.", thinkingSignature: "sig-a" },
        { type: "thinking", thinking: "", thinkingSignature: "opaque", redacted: true },
        { type: "toolCall", id: "toolu_01A", name: "read", arguments: { path: "a" } },
      ]),
    ),
  );
  entries.push(result("toolu_01A", "A"));
  entries.push(createModelChangeEntry(at(), "local", "local-chat"));
  entries.push(
    createMessageEntry(
      at(),
      answer("local-chat", "openai-completions", [
        { type: "toolCall", id: CHAT_CALL_ID, name: "read", arguments: { path: "b" } },
      ]),
    ),
  );
  entries.push(result(CHAT_CALL_ID, "B"));
  return entries;
}

const lastBody = () => server.journal().at(-1)?.body as { messages: Record<string, unknown>[] };

test("switched to Chat Completions: Anthropic's thinking as text, its tool ids paired, the image kept for an image model", async () => {
  const entries = session();
  // The context B was given for its first turn: up to A's tool result.
  const messages = modelMessages(entries, "e2");
  const chat = { ...resolveModel("local-chat"), imageInput: true };
  await provider().complete(chat, { messages });
  const [user, assistant, result] = lastBody().messages;
  expect(JSON.stringify(user)).toContain("data:image/png;base64,iVBORw0KGgo=");
  // Foreign thinking is plain text without its signature; redacted thinking does not travel.
  expect(assistant).toMatchObject({
    role: "assistant",
    content: "Look at a first.",
    tool_calls: [{ id: "toolu_01A", function: { name: "read", arguments: '{"path":"a"}' } }],
  });
  expect(JSON.stringify(assistant)).not.toContain("sig-a");
  expect(JSON.stringify(assistant)).not.toContain("opaque");
  expect(result).toEqual({ role: "tool", tool_call_id: "toolu_01A", content: "A" });
});

test("back on Anthropic: its own thinking replayed with the signature, B's call ids made valid and paired", async () => {
  const messages = modelMessages(session(), "e5");
  await provider().complete(resolveModel("local-anthropic"), { messages });
  const body = lastBody().messages as { role: string; content: Record<string, unknown>[] }[];
  const [user, own, ownResult, foreign, foreignResult] = body;
  // local-anthropic takes no images: the image is named, not sent.
  expect(JSON.stringify(user)).toContain("image omitted");
  expect(own!.content).toEqual([
    { type: "thinking", thinking: "Look at a first.", signature: "sig-a" },
    { type: "redacted_thinking", data: "opaque" },
    { type: "tool_use", id: "toolu_01A", name: "read", input: { path: "a" } },
  ]);
  expect(ownResult!.content[0]).toMatchObject({ type: "tool_result", tool_use_id: "toolu_01A" });
  const foreignId = toAnthropicToolId(CHAT_CALL_ID);
  expect(foreignId).toMatch(/^[a-zA-Z0-9_-]+$/);
  expect(foreign!.content).toEqual([{ type: "tool_use", id: foreignId, name: "read", input: { path: "b" } }]);
  expect(foreignResult!.content[0]).toMatchObject({ type: "tool_result", tool_use_id: foreignId });
});
