import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import { defaultPayloadConverter } from "@temporalio/common";
import { temporal } from "@temporalio/proto";
import { runWorkflowId } from "../../../src/contracts/runs";
import { convertToLlm } from "../../../src/core/messages";
import { checkInvariants } from "../../../src/core/sanitize";
import { PAYLOADS_FOLDER } from "../../../src/store/payload-storage";
import {
  ModelAttribute,
  RunStatusAttribute,
  SessionAttribute,
  TenantAttribute,
} from "../../../src/workflows/search-attributes";
import { s3Client, s3Settings } from "../../support/integration-env";
import { messagesOf, runStageForSuite } from "../../support/run-harness";

jest.setTimeout(120_000);

const stage = runStageForSuite();

test("a prompt answered with text: one LLM call, user + assistant entries stored", async () => {
  const ref = stage().newSession();
  const delivered = await stage().runs.deliver(ref, { text: "hello keel", mode: "auto" }, stage().settings());
  expect(delivered.delivery).toBe("started");
  const result = await stage().result(ref);
  expect(result.status).toBe("completed");
  const messages = messagesOf(await stage().entries(ref));
  expect(messages.map((message) => message.role)).toEqual(["user", "assistant"]);
  const answer = messages[1];
  expect(answer?.role === "assistant" && answer.content).toEqual([
    { type: "text", text: "You said: hello keel" },
  ]);
  expect(result.usage.totalTokens).toBeGreaterThan(0);
});

test("a multi-turn task with tool calls runs the tools in the workspace and answers", async () => {
  stage().llm.addScenario("write-then-read", {
    turns: [
      {
        toolCalls: [
          { name: "write", arguments: { path: "notes/hello.txt", content: "written by a tool\n" } },
        ],
      },
      { toolCalls: [{ name: "read", arguments: { path: "notes/hello.txt" } }] },
      { text: "The file says: {{lastToolResult}}" },
    ],
  });
  const ref = stage().newSession();
  await stage().runs.deliver(
    ref,
    { text: "[scenario:write-then-read] make a note", mode: "auto" },
    stage().settings(),
  );
  const result = await stage().result(ref);
  expect(result.status).toBe("completed");
  const messages = messagesOf(await stage().entries(ref));
  expect(messages.map((message) => message.role)).toEqual([
    "user",
    "assistant",
    "toolResult",
    "assistant",
    "toolResult",
    "assistant",
  ]);
  const last = messages.at(-1);
  expect(last?.role === "assistant" && last.content[0]).toEqual({
    type: "text",
    text: "The file says: written by a tool",
  });
  expect(checkInvariants(convertToLlm(messages))).toEqual([]);
});

test("parallel tool calls are recorded in source order", async () => {
  stage().llm.addScenario("parallel", {
    turns: [
      {
        toolCalls: [
          { name: "bash", arguments: { command: "sleep 0.6; echo first" } },
          { name: "bash", arguments: { command: "echo second" } },
          { name: "ls", arguments: {} },
        ],
      },
      { text: "done" },
    ],
  });
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "[scenario:parallel] go", mode: "auto" }, stage().settings());
  expect((await stage().result(ref)).status).toBe("completed");
  const messages = messagesOf(await stage().entries(ref));
  const assistant = messages[1];
  const results = messages.slice(2, 5);
  const callIds =
    assistant?.role === "assistant"
      ? assistant.content.flatMap((b) => (b.type === "toolCall" ? [b.id] : []))
      : [];
  expect(results.map((message) => (message.role === "toolResult" ? message.toolCallId : ""))).toEqual(
    callIds,
  );
  const first = results[0];
  expect(
    first?.role === "toolResult" && first.content[0]?.type === "text" && first.content[0].text,
  ).toContain("first");
});

test("a payload over the threshold travels through S3, not through workflow history", async () => {
  const ref = stage().newSession();
  const huge = `please summarise: ${"lorem ipsum ".repeat(30_000)}`; // ~360 KB
  await stage().runs.deliver(ref, { text: huge, mode: "auto" }, stage().settings());
  expect((await stage().result(ref)).status).toBe("completed");
  const messages = messagesOf(await stage().entries(ref));
  expect(messages[0]).toMatchObject({ role: "user", content: huge });
  const history = await stage().client.workflow.getHandle(runWorkflowId(ref)).fetchHistory();
  const historyBytes = temporal.api.history.v1.History.encode(history).finish().length;
  expect(historyBytes).toBeLessThan(100_000);
  const stored = await s3Client().send(
    new ListObjectsV2Command({
      Bucket: s3Settings().bucket,
      Prefix: `${s3Settings().prefix}${PAYLOADS_FOLDER}`,
    }),
  );
  expect(stored.KeyCount).toBeGreaterThan(0);
});

test("a run is started with its search attributes, upserts only its status changes and records no patch marker", async () => {
  const ref = stage().newSession();
  await stage().runs.deliver(ref, { text: "hello attributes", mode: "auto" }, stage().settings());
  expect((await stage().result(ref)).status).toBe("completed");
  const handle = stage().client.workflow.getHandle(runWorkflowId(ref));
  const attributes = (await handle.describe()).typedSearchAttributes;
  expect(attributes.get(TenantAttribute)).toBe(ref.tenantId);
  expect(attributes.get(SessionAttribute)).toBe(ref.sessionId);
  expect(attributes.get(ModelAttribute)).toBe(stage().settings().model);
  expect(attributes.get(RunStatusAttribute)).toBe("completed");
  const events = (await handle.fetchHistory()).events ?? [];
  const started = events[0]?.workflowExecutionStartedEventAttributes?.searchAttributes?.indexedFields ?? {};
  expect(Object.keys(started).sort()).toEqual(["KeelModel", "KeelSession", "KeelStatus", "KeelTenant"]);
  expect(defaultPayloadConverter.fromPayload(started.KeelStatus!)).toBe("running");
  const upserted = events.flatMap((event) =>
    Object.keys(event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}),
  );
  // running (with the start) → completed: the tenant, session and model came with the start too,
  // and a run of this version takes its code's branches without patch markers (RUN_VERSION).
  expect(upserted).toEqual(["KeelStatus"]);
  expect(events.filter((event) => event.markerRecordedEventAttributes)).toEqual([]);
});
