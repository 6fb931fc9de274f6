/**
 * `POST …/replay`, `keel replay` and `keel compare` on the real stack (Temporal, S3, a worker, the
 * scripted local model): a replay from a user message restores the files as they were before it,
 * links back to its origin, is not started twice by a retry, and is compared from its own entries.
 */
import { idempotencyRecordKey } from "../../../src/api/idempotency";
import type { SessionEntry } from "../../../src/core/session-types";
import type { TurnContext } from "../../../src/providers/local-server/types";
import { uniqueName } from "../../support/integration-env";
import { type CliApi, runKeel, startCliApi } from "../cli/keel-process";
import { type ApiStage, createApiStage, expectProblem } from "./api-stage";

const KEY = `replay-key-${uniqueName("k")}`;
let api: ApiStage;
let cli: CliApi;
const scenario = uniqueName("replay");

beforeAll(async () => {
  api = await createApiStage();
  cli = await startCliApi(api.stage, { [KEY]: api.tenants.a });
  // On the Chat Completions model (local-chat) a message saying "write one" or "write two" writes
  // that into a.txt; any other model reads a.txt instead. A tool result is quoted.
  api.stage.llm.addScenario(scenario, {
    turns: [],
    after: (context: TurnContext) => {
      const messages = context.request.messages;
      if (messages.at(-1)?.role === "tool") return { text: "The file says: {{lastToolResult}}" };
      if (context.request.api !== "openai-completions")
        return { toolCalls: [{ name: "read", arguments: { path: "a.txt" } }] };
      const last = messages.findLast((message) => message.role === "user")?.text ?? "";
      return {
        toolCalls: [
          { name: "write", arguments: { path: "a.txt", content: last.includes("two") ? "two" : "one" } },
        ],
      };
    },
  });
}, 120_000);

afterAll(async () => {
  await cli?.close();
  await api?.close();
});

jest.setTimeout(120_000);

const refOf = (sessionId: string) => ({ tenantId: api.tenants.a, sessionId });
const keel = (args: string[]) => runKeel(args, { KEEL_API_URL: cli.url, KEEL_API_KEY: KEY });

async function runToEnd(sessionId: string, text: string): Promise<void> {
  const sent = await api.call("POST", `/v1/sessions/${sessionId}/messages`, { json: { text } });
  expect(sent.status).toBe(202);
  expect((await api.stage.result(refOf(sessionId))).status).toBe("completed");
}

const userMessages = (entries: SessionEntry[]) =>
  entries.filter((entry) => entry.type === "message" && entry.message.role === "user");

/** The origin: turn 1 writes a.txt "one", turn 2 overwrites it with "two". */
let origin: { sessionId: string; secondUserId: string; secondParentId: string; lastId: string };

beforeAll(async () => {
  const sessionId = api.sessionId();
  await runToEnd(sessionId, `[scenario:${scenario}] write one`);
  await runToEnd(sessionId, "write two");
  const entries = await api.stage.entries(refOf(sessionId));
  const second = userMessages(entries)[1];
  if (!second) throw new Error("no second user message");
  origin = {
    sessionId,
    secondUserId: second.id,
    secondParentId: second.parentId as string,
    lastId: entries.at(-1)?.id as string,
  };
}, 120_000);

/** The text of the session's read results. */
async function readResults(sessionId: string): Promise<string[]> {
  return (await api.stage.entries(refOf(sessionId))).flatMap((entry) =>
    entry.type === "message" && entry.message.role === "toolResult" && entry.message.toolName === "read"
      ? [JSON.stringify(entry.message.content)]
      : [],
  );
}

let replays: string[] = [];

test("keel replay from turn 2's message, twice on another model: each fork reads a.txt as turn 1 left it", async () => {
  const replayed = await keel([
    "replay",
    origin.sessionId,
    "--from",
    origin.secondUserId,
    "--times",
    "2",
    "--model",
    "local-responses",
    "--wait",
    "--json",
  ]);
  expect(replayed).toMatchObject({ code: 0, stderr: "" });
  const answer = JSON.parse(replayed.stdout);
  expect(answer).toMatchObject({
    origin: { sessionId: origin.sessionId, entryId: origin.secondUserId },
    question: "write two",
  });
  expect(answer.runs).toHaveLength(2);
  replays = answer.runs.map((run: { sessionId: string }) => run.sessionId);
  expect(new Set(replays).size).toBe(2);
  for (const run of answer.runs) expect(run).toMatchObject({ outcome: "started", runId: expect.any(String) });
  for (const forkId of replays) {
    const results = await readResults(forkId);
    expect(results).toHaveLength(1);
    expect(results[0]).toContain("one");
    expect(results[0]).not.toContain("two");
    const session = await api.call("GET", `/v1/sessions/${forkId}`);
    expect(session.body).toMatchObject({ parentSession: origin.sessionId, run: { status: "completed" } });
  }
  // --wait prints the comparison of the forks: each ran on the model asked for.
  expect(answer.comparison.map((row: { models: string[] }) => row.models)).toEqual([
    ["local-responses"],
    ["local-responses"],
  ]);
});

test("keel compare shows both replays with the turns and cost their own entries hold", async () => {
  expect(replays).toHaveLength(2);
  const inherited = new Set((await api.stage.entries(refOf(origin.sessionId))).map((entry) => entry.id));
  const expected = await Promise.all(
    replays.map(async (forkId) => {
      const own = (await api.stage.entries(refOf(forkId))).filter((entry) => !inherited.has(entry.id));
      const assistants = own.flatMap((entry) =>
        entry.type === "message" && entry.message.role === "assistant" ? [entry.message] : [],
      );
      return {
        sessionId: forkId,
        turns: assistants.length,
        costUsd: assistants.reduce((sum, message) => sum + message.usage.cost.total, 0),
      };
    }),
  );
  const compared = await keel(["compare", ...replays, "--json"]);
  expect(compared).toMatchObject({ code: 0, stderr: "" });
  const rows = JSON.parse(compared.stdout).sessions;
  expect(rows).toMatchObject(
    expected.map((row) => ({
      ...row,
      parentSession: origin.sessionId,
      forkedAt: origin.secondParentId,
      status: "completed",
      toolCalls: { read: 1 },
      finalText: expect.stringContaining("The file says:"),
    })),
  );
  expect(expected.every((row) => row.turns === 2 && row.costUsd > 0)).toBe(true);
  const table = await keel(["compare", ...replays]);
  expect(table.code).toBe(0);
  for (const forkId of replays) expect(table.stdout).toContain(forkId.slice(0, 40));
  expect(table.stdout).toMatch(/^turns\s+2\s+2$/m);
  expect(table.stdout).toMatch(/^cost\s+\$\d+\.\d{4}\s+\$\d+\.\d{4}$/m);
});

test("a retried replay with the same Idempotency-Key starts nothing new, even once its record is lost", async () => {
  const key = uniqueName("replay-key");
  const path = `/v1/sessions/${origin.sessionId}/replay`;
  const send = () =>
    api.call("POST", path, {
      json: { fromEntryId: origin.secondUserId, settings: { model: "local-responses" } },
      headers: { "idempotency-key": key },
    });
  const counted = await api.runsCounted(api.keys.a);
  const first = await send();
  expect(first.status).toBe(201);
  const [run] = first.body.runs;
  expect(run).toMatchObject({ outcome: "started", runId: expect.any(String) });
  const retried = await send();
  expect(retried.status).toBe(201);
  expect(retried.headers.get("idempotent-replayed")).toBe("true");
  expect(retried.body).toEqual(first.body);
  expect(await api.runsCounted(api.keys.a)).toBe(counted + 1);
  await api.stage.result(refOf(run.sessionId));

  // The record gone (S3 lost it), the request runs again: the fork it names is the first one, and
  // its start lands on the first delivery (the same run), not on a new run.
  await api.objects.remove(idempotencyRecordKey(api.objects.prefix, api.tenants.a, key, "POST", path));
  const again = await send();
  expect(again.status).toBe(201);
  expect(again.headers.get("idempotent-replayed")).toBeNull();
  expect(again.body.runs).toEqual([expect.objectContaining({ sessionId: run.sessionId, runId: run.runId })]);
  expect(await readResults(run.sessionId)).toHaveLength(1);
});

test("replay refusals: unknown session, unknown entry, nothing to send, a bad count", async () => {
  const replay = (sessionId: string, json: unknown) =>
    api.call("POST", `/v1/sessions/${sessionId}/replay`, { json });
  expectProblem(
    await replay(api.sessionId(), { fromEntryId: origin.secondUserId }),
    404,
    "session-not-found",
  );
  expectProblem(await replay(origin.sessionId, { fromEntryId: "0123456789abcdef" }), 404, "entry-not-found");
  // The last entry is the final answer: no user message follows it.
  const nothing = await replay(origin.sessionId, { fromEntryId: origin.lastId });
  expectProblem(nothing, 422, "no-replay-message");
  expectProblem(
    await replay(origin.sessionId, { fromEntryId: origin.secondUserId, times: 21 }),
    400,
    "invalid-request",
  );
});
