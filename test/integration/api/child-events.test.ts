/**
 * Sub-agents seen from the API: `GET …/events?children=true` carries a `task` call's child events
 * (SSE events named `child`, marked with the child session and the call) between the call's start
 * and end, the parent's own numbering untouched; a message steered to the child session reaches the
 * child's run directly.
 */

import { DEFAULT_RUN_SETTINGS } from "../../../src/contracts/runs";
import { childSessionId } from "../../../src/core/agents";
import type { AgentEvent } from "../../../src/core/events";
import { messagesOf } from "../../support/run-harness";
import { readSse, type SseEvent } from "../../support/sse";
import { type ApiStage, createApiStage } from "./api-stage";

let api: ApiStage;

beforeAll(async () => {
  api = await createApiStage();
});

afterAll(async () => {
  await api?.close();
});

type Marked = AgentEvent & { child?: { sessionId: string; toolCallId: string; parentSessionId: string } };

const open = (sessionId: string) =>
  api.app.request(`/v1/sessions/${sessionId}/events?children=true&deltas=false`, {
    headers: { authorization: `Bearer ${api.keys.a}`, accept: "text/event-stream" },
  });

const parentEnded = (events: SseEvent[]) =>
  events.some((event) => event.event === "agent_end" && event.id !== undefined);

test("a task call's child events come nested in the parent's stream; steering the child session reaches the child", async () => {
  api.stage.llm.addScenario("nest-parent", {
    turns: [
      {
        toolCalls: [{ name: "task", arguments: { agent: "sleeper", prompt: "[scenario:nest-child] wait" } }],
      },
    ],
    after: { text: "Parent read: {{lastToolResult}}" },
  });
  api.stage.llm.addScenario("nest-child", {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command: "sleep 3" } }] }],
    after: { text: "Child heard: {{lastUser}}" },
  });
  const sessionId = api.sessionId();
  const sent = await api.call("POST", `/v1/sessions/${sessionId}/messages`, {
    json: {
      text: "[scenario:nest-parent] go",
      tools: [...DEFAULT_RUN_SETTINGS.tools, "task"],
      agents: [{ name: "sleeper", description: "sleeps", tools: ["bash"] }],
    },
  });
  expect(sent.status).toBe(202);

  let steered = false;
  const events = await readSse(await open(sessionId), (seen) => {
    const child = seen.find((event) => event.event === "child");
    if (child && !steered) {
      steered = true;
      const { sessionId: childId } = (JSON.parse(child.data!) as Marked).child!;
      void api
        .call("POST", `/v1/sessions/${childId}/messages`, {
          json: { text: "steered into the child", delivery: "steer" },
        })
        .then((response) => expect(response.status).toBe(202));
    }
    return parentEnded(seen);
  });

  const parent = events.filter((event) => event.event !== "child");
  // The parent's numbering is its own: 1, 2, … with no gap.
  expect(parent.map((event) => Number(event.id))).toEqual(parent.map((_, index) => index + 1));
  const data = events.map((event) => JSON.parse(event.data!) as Marked);
  const start = data.findIndex((event) => event.type === "tool_execution_start" && event.toolName === "task");
  const end = data.findIndex((event) => event.type === "tool_execution_end" && event.toolName === "task");
  const callId = (data[start] as Extract<AgentEvent, { type: "tool_execution_start" }>).toolCallId;
  const mark = {
    sessionId: childSessionId(sessionId, callId),
    toolCallId: callId,
    parentSessionId: sessionId,
  };
  const children = events.flatMap((event, index) =>
    event.event === "child" ? [{ index, event: data[index]! }] : [],
  );
  // Every child event sits inside the call, marked, in the child's order, from its start to its end.
  expect(children.every(({ index }) => index > start && index < end)).toBe(true);
  expect(children.every(({ event }) => JSON.stringify(event.child) === JSON.stringify(mark))).toBe(true);
  expect(children.map(({ event }) => event.seq)).toEqual(children.map((_, index) => index + 1));
  expect(children[0]?.event.type).toBe("agent_start");
  expect(children.at(-1)?.event.type).toBe("agent_end");
  expect(
    children.some(({ event }) => event.type === "tool_execution_start" && event.toolName === "bash"),
  ).toBe(true);

  // The steer went to the child's run: its answer, and so the task's result, heard it.
  const parentMessages = messagesOf(await api.stage.entries({ tenantId: api.tenants.a, sessionId }));
  const last = parentMessages.at(-1);
  expect(last?.role === "assistant" && last.content[0]?.type === "text" && last.content[0].text).toContain(
    "Child heard: steered into the child",
  );
});

test("a child's approval request shows in the parent's stream and is approved through the API on the child session", async () => {
  api.stage.llm.addScenario("nest-ask-parent", {
    turns: [
      {
        toolCalls: [{ name: "task", arguments: { agent: "shell", prompt: "[scenario:nest-ask-child] run" } }],
      },
    ],
    after: { text: "Parent read: {{lastToolResult}}" },
  });
  api.stage.llm.addScenario("nest-ask-child", {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command: "echo approved-in-child" } }] }],
    after: { text: "Child saw: {{lastToolResult}}" },
  });
  const sessionId = api.sessionId();
  const sent = await api.call("POST", `/v1/sessions/${sessionId}/messages`, {
    json: {
      text: "[scenario:nest-ask-parent] go",
      tools: [...DEFAULT_RUN_SETTINGS.tools, "task"],
      agents: [{ name: "shell", description: "runs commands", tools: ["bash"] }],
      policy: { rules: [{ tool: "bash", action: "ask" }], default: "allow" },
    },
  });
  expect(sent.status).toBe(202);

  let approval: Promise<number> | undefined;
  const events = await readSse(await open(sessionId), (seen) => {
    const asked = seen
      .filter((event) => event.event === "child")
      .map((event) => JSON.parse(event.data!) as Marked)
      .find((event) => event.type === "approval_requested");
    if (asked?.type === "approval_requested" && !approval)
      approval = api
        .call("POST", `/v1/sessions/${asked.child!.sessionId}/approvals/${asked.toolCallId}`, {
          json: { decision: "approve" },
        })
        .then((response) => response.status);
    return parentEnded(seen);
  });
  expect(await approval).toBe(202);
  const childEvents = events
    .filter((event) => event.event === "child")
    .map((event) => JSON.parse(event.data!) as Marked);
  expect(childEvents.map((event) => event.type)).toEqual(
    expect.arrayContaining(["approval_requested", "approval_resolved", "agent_end"]),
  );
  const messages = messagesOf(await api.stage.entries({ tenantId: api.tenants.a, sessionId }));
  const last = messages.at(-1);
  expect(last?.role === "assistant" && last.content[0]?.type === "text" && last.content[0].text).toContain(
    "approved-in-child",
  );
});

test("a child's own sub-agent: its events come too, marked with the child session as their parent, inside the child's call", async () => {
  api.stage.llm.addScenario("deep-root", {
    turns: [
      { toolCalls: [{ name: "task", arguments: { agent: "lead", prompt: "[scenario:deep-lead] split" } }] },
    ],
    after: { text: "root read: {{lastToolResult}}" },
  });
  api.stage.llm.addScenario("deep-lead", {
    turns: [
      { toolCalls: [{ name: "task", arguments: { agent: "lead", prompt: "[scenario:deep-leaf] look" } }] },
    ],
    after: { text: "lead read: {{lastToolResult}}" },
  });
  api.stage.llm.addScenario("deep-leaf", {
    turns: [{ toolCalls: [{ name: "ls", arguments: {} }] }],
    after: { text: "leaf done" },
  });
  const sessionId = api.sessionId();
  const sent = await api.call("POST", `/v1/sessions/${sessionId}/messages`, {
    json: {
      text: "[scenario:deep-root] go",
      tools: [...DEFAULT_RUN_SETTINGS.tools, "task"],
      agents: [{ name: "lead", description: "splits work", tools: ["ls", "task"] }],
    },
  });
  expect(sent.status).toBe(202);
  const events = await readSse(await open(sessionId), parentEnded);
  const data = events.map((event) => JSON.parse(event.data!) as Marked);
  const rootCall = data.find((event) => event.type === "tool_execution_start" && event.toolName === "task");
  const childId = childSessionId(sessionId, (rootCall as { toolCallId: string }).toolCallId);
  const ofChild = data.filter((event) => event.child?.sessionId === childId);
  const childCall = ofChild.find(
    (event) => event.type === "tool_execution_start" && event.toolName === "task",
  );
  const childCallId = (childCall as { toolCallId: string }).toolCallId;
  const grandchildId = childSessionId(childId, childCallId);
  const ofGrandchild = data.filter((event) => event.child?.sessionId === grandchildId);
  expect(ofGrandchild.every((event) => event.child?.parentSessionId === childId)).toBe(true);
  expect(ofGrandchild.every((event) => event.child?.toolCallId === childCallId)).toBe(true);
  expect(ofGrandchild.map((event) => event.type)).toEqual(
    expect.arrayContaining(["agent_start", "tool_execution_start", "agent_end"]),
  );
  expect(ofGrandchild.map((event) => event.seq)).toEqual(ofGrandchild.map((_, index) => index + 1));
  // Inside the child's task call: after its start, before its end.
  const index = (predicate: (event: Marked) => boolean) => data.findIndex(predicate);
  const childStart = index((event) => event === childCall);
  const childEnd = index(
    (event) =>
      event.child?.sessionId === childId && event.type === "tool_execution_end" && event.toolName === "task",
  );
  const grandchildIndexes = data.flatMap((event, at) =>
    event.child?.sessionId === grandchildId ? [at] : [],
  );
  expect(grandchildIndexes.length).toBeGreaterThan(0);
  expect(grandchildIndexes.every((at) => at > childStart && at < childEnd)).toBe(true);
});
