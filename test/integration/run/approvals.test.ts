import type { RunSettings } from "../../../src/contracts/runs";
import { eventually, expectIntactSession, messagesOf, runStageForSuite } from "../../support/run-harness";

const stage = runStageForSuite();

beforeAll(() => {
  stage().llm.addScenario("needs-approval", {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command: "echo original" } }] }],
    after: { text: "Result: {{lastToolResult}}" },
  });
});

function askForBash(approvalTimeoutMs = 60_000): Partial<RunSettings> {
  return { policy: { rules: [{ tool: "bash", action: "ask" }], default: "allow", approvalTimeoutMs } };
}

async function runUntilApproval(settings: Partial<RunSettings>) {
  const ref = stage().newSession();
  await stage().runs.deliver(
    ref,
    { text: "[scenario:needs-approval] go", mode: "auto" },
    stage().settings(settings),
  );
  const state = await eventually(
    async () => {
      const current = await stage().runs.state(ref);
      return current?.status === "waiting_approval" ? current : undefined;
    },
    30_000,
    "the approval request",
  );
  const pending = state.pendingToolCalls[0];
  expect(pending).toMatchObject({ name: "bash", state: "awaiting_approval" });
  return { ref, toolCallId: pending!.toolCallId };
}

function lastAnswer(messages: ReturnType<typeof messagesOf>): string {
  const last = messages.at(-1);
  return last?.role === "assistant"
    ? last.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("")
    : "";
}

test("approve: the tool runs as the model asked", async () => {
  const { ref, toolCallId } = await runUntilApproval(askForBash());
  await stage().runs.approve(ref, { toolCallId, decision: "approve" });
  expect((await stage().result(ref)).status).toBe("completed");
  expect(lastAnswer(messagesOf(await stage().entries(ref)))).toContain("original");
});

test("approve with edited arguments: the tool runs with the edit", async () => {
  const { ref, toolCallId } = await runUntilApproval(askForBash());
  await stage().runs.approve(ref, { toolCallId, decision: "approve", arguments: { command: "echo edited" } });
  expect((await stage().result(ref)).status).toBe("completed");
  const messages = messagesOf(await expectIntactSession(stage(), ref));
  const result = messages.find((message) => message.role === "toolResult");
  // The stored result says what ran and why; the model's answer quotes the edited command's output.
  expect(result).toMatchObject({
    isError: false,
    content: [
      {
        type: "text",
        text: expect.stringContaining(
          'ran with {"command":"echo edited"} instead of {"command":"echo original"}',
        ),
      },
      { type: "text", text: expect.stringContaining("edited") },
    ],
    details: { approval: { decision: "approved_with_edits", arguments: { command: "echo edited" } } },
  });
  expect(result?.role === "toolResult" ? JSON.stringify(result.content[1]) : "").not.toContain("original");
  expect(lastAnswer(messages)).toContain("edited");
});

test("reject: the model reads an error result and the tool never runs", async () => {
  const { ref, toolCallId } = await runUntilApproval(askForBash());
  await stage().runs.approve(ref, { toolCallId, decision: "reject", reason: "not today" });
  expect((await stage().result(ref)).status).toBe("completed");
  const messages = messagesOf(await stage().entries(ref));
  const result = messages.find((message) => message.role === "toolResult");
  expect(result).toMatchObject({
    isError: true,
    content: [{ type: "text", text: expect.stringContaining("not today") }],
  });
});

test("no decision before the timeout counts as a denial", async () => {
  const { ref } = await runUntilApproval(askForBash(1_500));
  expect((await stage().result(ref)).status).toBe("completed");
  const result = messagesOf(await stage().entries(ref)).find((message) => message.role === "toolResult");
  expect(result).toMatchObject({
    isError: true,
    content: [{ type: "text", text: expect.stringContaining("timeout") }],
  });
});

test("deny by policy: an error result without asking", async () => {
  const ref = stage().newSession();
  const settings = stage().settings({
    policy: {
      rules: [{ tool: "bash", argumentsPattern: "original", action: "deny" }],
      default: "allow",
      approvalTimeoutMs: 1000,
    },
  });
  await stage().runs.deliver(ref, { text: "[scenario:needs-approval] go", mode: "auto" }, settings);
  expect((await stage().result(ref)).status).toBe("completed");
  const result = messagesOf(await stage().entries(ref)).find((message) => message.role === "toolResult");
  expect(result).toMatchObject({
    isError: true,
    content: [{ type: "text", text: expect.stringContaining("denied") }],
  });
});
