/**
 * What a follower is told while a run waits on a worker: a worker killed during bash, another
 * started later. The event stream says the run waits for a worker before the call ends, and the
 * lost attempt's output that arrives after that (published before the kill, read only once the
 * run was taken over) is not printed as new output by the CLI's printer.
 */
import { EventPrinter } from "../../../src/cli/render";
import type { RunWait } from "../../../src/contracts/waits";
import type { AgentEvent, LiveEvent } from "../../../src/core/events";
import { expectIntactSession, messagesOf } from "../../support/run-harness";
import { readSse } from "../../support/sse";
import { type ApiStage, createApiStage } from "./api-stage";

let api: ApiStage;

beforeAll(async () => {
  api = await createApiStage({ withWorker: false });
});

afterAll(async () => {
  await api?.close();
});

jest.setTimeout(120_000);

test("a worker killed during bash: the stream says the run waits for a worker, and no old output follows as new", async () => {
  api.stage.llm.addScenario("takeover-ticks", {
    turns: [
      {
        toolCalls: [
          {
            name: "bash",
            arguments: { command: "for i in 1 2 3 4 5 6 7 8; do echo tick $i; sleep 0.4; done" },
          },
        ],
      },
    ],
    after: { text: "done" },
  });
  const first = await api.stage.startWorker();
  const ref = { tenantId: api.tenants.a, sessionId: api.sessionId() };
  const settings = api.stage.settings({});
  settings.timeouts = { ...settings.timeouts, heartbeatMs: 3_000 };
  await api.stage.runs.deliver(ref, { text: "[scenario:takeover-ticks] go", mode: "auto" }, settings);
  const response = await api.app.request(`/v1/sessions/${ref.sessionId}/events`, {
    headers: { authorization: `Bearer ${api.keys.a}`, accept: "text/event-stream" },
  });
  let killed = false;
  const events = await readSse(response, (seen) => {
    if (!killed && seen.some((event) => event.event === "tool_execution_update")) {
      killed = true;
      void first.kill().then(() => api.stage.startWorker());
    }
    return seen.some((event) => event.event === "agent_end" && event.id !== undefined);
  });
  const waited = events.findIndex((event) => event.event === "waiting");
  const ended = events.findIndex((event) => event.event === "tool_execution_end");
  expect(waited).toBeGreaterThan(-1);
  expect(waited).toBeLessThan(ended);
  expect(JSON.parse(events[waited]!.data!)).toMatchObject({ type: "waiting", on: "worker" });

  // As `keel events --follow` prints them: the wait, and no tool output printed after it.
  let text = "";
  const printer = new EventPrinter({ write: (chunk) => (text += chunk), isTTY: false }, false);
  for (const { event, data } of events) {
    const parsed = JSON.parse(data!) as AgentEvent | LiveEvent | RunWait;
    if ("seq" in parsed) printer.print(parsed);
    else printer.live(parsed);
    void event;
  }
  const lines = text.split("\n");
  const told = lines.findIndex((line) => line.startsWith("  … waiting for a worker:"));
  expect(told).toBeGreaterThan(-1);
  const end = lines.findIndex((line) => line.startsWith("  ✓ bash") || line.startsWith("  ✗ bash"));
  expect(lines.slice(told + 1, end).filter((line) => line.includes("│ tick"))).toEqual([]);

  // What the takeover left stored: the run completed, its session whole, bash answered once.
  expect((await api.stage.result(ref)).status).toBe("completed");
  const stored = messagesOf(await expectIntactSession(api.stage, ref));
  expect(stored.filter((message) => message.role === "toolResult")).toHaveLength(1);
});
