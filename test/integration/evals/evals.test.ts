/**
 * Evals through the API on the real Temporal dev server and S3 with the local model playing a
 * different behaviour per model: a suite where one model passes what the other fails (pass rates,
 * per-case results, failing trials linked to their sessions), checks that time out, a budget that
 * pauses the eval and a raise that lets it finish, and refusals of bad requests.
 */
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TurnContext } from "../../../src/providers/local-server/types";
import { uniqueName } from "../../support/integration-env";
import { eventually, expectIntactSession, type WorkerProcess } from "../../support/run-harness";
import { type ApiStage, createApiStage, expectProblem } from "../api/api-stage";

let api: ApiStage;
/** The stage's worker (one test kills it and starts another). */
let worker: WorkerProcess;

beforeAll(async () => {
  api = await createApiStage({ withWorker: false });
  worker = await api.stage.startWorker();
});

afterAll(async () => {
  await api?.close();
});

/** Model A (`local-chat`) does the work; model B (`local-anthropic`) does it wrong or not at all. */
const GOOD = "local-chat";
const BAD = "local-anthropic";
const isGood = (context: TurnContext) => context.request.api === "openai-completions";

function scenario(
  first: (context: TurnContext) => {
    toolCalls?: { name: string; arguments: Record<string, unknown> }[];
    text?: string;
  },
) {
  const name = uniqueName("eval");
  api.stage.llm.addScenario(name, { turns: [first], after: { text: "Done." } });
  return name;
}

const modelCalls = (names: string[]) =>
  api.stage.llm.journal().filter((entry) => names.includes(entry.scenario)).length;

async function evalView(evalId: string, call = api.call) {
  const response = await call("GET", `/v1/evals/${evalId}`);
  expect(response.status).toBe(200);
  return response.body;
}

/** The stage tenant's tool seconds of today (`GET /v1/usage`). */
async function toolSecondsToday(): Promise<number> {
  const today = new Date().toISOString().slice(0, 10);
  const usage = await api.call("GET", `/v1/usage?from=${today}&to=${today}`);
  expect(usage.status).toBe(200);
  return usage.body.days[0]?.toolSeconds ?? 0;
}

/** Every trial session of the eval, checked as every run test checks its stored session. */
async function expectIntactTrials(view: { report: { cases: { results: { sessions: string[] }[] }[] } }) {
  const sessions = view.report.cases.flatMap((row) => row.results.flatMap((result) => result.sessions));
  for (const sessionId of sessions)
    await expectIntactSession(api.stage, { tenantId: api.tenants.a, sessionId });
  return sessions;
}

const finished = (evalId: string, state = "completed", call = api.call) =>
  eventually(
    async () => {
      const view = await evalView(evalId, call);
      return view.progress.state === state ? view : undefined;
    },
    120_000,
    `eval ${evalId} ${state}`,
  );

test("model A passes what model B fails: pass rates, per-case results and failing trials with their sessions", async () => {
  const write = scenario((context) => ({
    toolCalls: [
      { name: "write", arguments: { path: "answer.txt", content: isGood(context) ? "42\n" : "41\n" } },
    ],
  }));
  const build = scenario((context) =>
    isGood(context)
      ? { toolCalls: [{ name: "bash", arguments: { command: "mkdir -p out && echo ok > out/done" } }] }
      : { text: "I would rather not." },
  );
  const talk = scenario(() => ({ text: "Nothing to change." }));
  const suite = {
    name: "a-vs-b",
    cases: [
      {
        id: "answer",
        prompt: `[scenario:${write}] Put the answer in answer.txt.`,
        checks: [
          { type: "file", path: "answer.txt", contains: "42" },
          { type: "command", command: "grep -qx 42 answer.txt" },
        ],
      },
      {
        id: "build",
        prompt: `[scenario:${build}] Build out/done.`,
        checks: [{ type: "command", command: "test -f out/done" }],
      },
      {
        id: "talk",
        prompt: `[scenario:${talk}] Change nothing.`,
        checks: [
          { type: "file", path: "junk.txt", exists: false },
          { type: "maxTurns", value: 1 },
        ],
      },
    ],
  };
  const started = await api.call("POST", "/v1/evals", {
    json: { suite, models: [GOOD, BAD], repeat: 2, concurrency: 4 },
  });
  expect(started.status).toBe(201);
  expect(started.body.trials).toBe(12);
  const view = await finished(started.body.evalId);

  const byModel = Object.fromEntries(
    view.report.models.map((model: { model: string }) => [model.model, model]),
  );
  expect(byModel[GOOD]).toMatchObject({ trials: 6, finished: 6, passed: 6, passRate: 1 });
  expect(byModel[BAD]).toMatchObject({ trials: 6, finished: 6, passed: 2 });
  expect(byModel[BAD].passRate).toBeCloseTo(2 / 6);
  // The Wilson interval around 2/6 holds it and stays inside [0, 1].
  expect(byModel[BAD].interval[0]).toBeGreaterThan(0.05);
  expect(byModel[BAD].interval[1]).toBeLessThan(0.75);
  expect(byModel[GOOD].costUsd).toBeGreaterThan(0);

  const rows = Object.fromEntries(
    view.report.cases.map((row: { caseId: string; results: { model: string; passed: number }[] }) => [
      row.caseId,
      Object.fromEntries(row.results.map((result) => [result.model, result.passed])),
    ]),
  );
  expect(rows).toEqual({
    answer: { [GOOD]: 2, [BAD]: 0 },
    build: { [GOOD]: 2, [BAD]: 0 },
    talk: { [GOOD]: 2, [BAD]: 2 },
  });
  // Every failing trial is B's, names the check that failed and links a session holding its run.
  expect(view.report.failing).toHaveLength(4);
  for (const failing of view.report.failing) {
    expect(failing.model).toBe(BAD);
    expect(failing.failed.length).toBeGreaterThan(0);
    const session = await api.call("GET", `/v1/sessions/${failing.sessionId}`);
    expect(session.status).toBe(200);
  }
  const answerFailure = view.report.failing.find(
    (failing: { caseId: string }) => failing.caseId === "answer",
  );
  expect(answerFailure.failed.join("\n")).toContain("does not contain");
  // One run per trial, each paid once: two model calls per trial (the tool turn and the answer)
  // for the cases that called a tool, one for those that did not.
  expect(modelCalls([write])).toBe(8);
  expect(modelCalls([build])).toBe(4 + 2);
  expect(modelCalls([talk])).toBe(4);

  expect(await expectIntactTrials(view)).toHaveLength(12);
  const list = await api.call("GET", "/v1/evals");
  expect(list.body.evals.map((entry: { evalId: string }) => entry.evalId)).toContain(started.body.evalId);
  // Another tenant does not see it.
  expectProblem(
    await api.call("GET", `/v1/evals/${started.body.evalId}`, { key: api.keys.b }),
    404,
    "eval-not-found",
  );
}, 240_000);

test("a check that runs too long fails its case; an eval over its budget pauses until the budget is raised", async () => {
  const talk = scenario(() => ({ text: "Fine." }));
  const tool = scenario(() => ({ toolCalls: [{ name: "bash", arguments: { command: "echo > done.txt" } }] }));
  const longLine = scenario(() => ({
    toolCalls: [{ name: "write", arguments: { path: "line.txt", content: `${"a".repeat(64)}b\n` } }],
  }));
  const hostDir = join(tmpdir(), uniqueName("eval-escape"));
  const suite = {
    cases: [
      {
        id: "slow-check",
        prompt: `[scenario:${talk}] one`,
        checks: [{ type: "command", command: "sleep 30", timeoutSeconds: 1 }],
      },
      // A check is a sandboxed command like a model's: a write to a host path lands nowhere on the host.
      {
        id: "second",
        prompt: `[scenario:${talk}] two`,
        checks: [{ type: "command", command: `mkdir -p ${hostDir} && echo escaped > ${hostDir}/out; true` }],
      },
      { id: "third", prompt: `[scenario:${talk}] three`, checks: [] },
      // Nobody watches a trial: a run over its own budget ends instead of waiting a day paused,
      // and a call the policy would ask about is refused instead of waiting for an approval.
      {
        id: "own-budget",
        prompt: `[scenario:${tool}] four`,
        settings: { limits: { maxCostUsd: 0.0000001 } },
        checks: [{ type: "file", path: "done.txt" }],
      },
      // A pattern that backtracks without end is stopped, not left to hold the worker.
      {
        id: "backtracks",
        prompt: `[scenario:${longLine}] six`,
        checks: [{ type: "file", path: "line.txt", matches: "^(a+)+$" }],
      },
      {
        id: "asks",
        prompt: `[scenario:${tool}] five`,
        settings: { policy: { rules: [{ tool: "bash", action: "ask" }] } },
        checks: [{ type: "file", path: "done.txt", exists: false }],
      },
    ],
  };
  const toolSecondsBefore = await toolSecondsToday();
  const started = await api.call("POST", "/v1/evals", {
    json: { suite, models: [GOOD], concurrency: 1, maxCostUsd: 0.000001 },
  });
  expect(started.status).toBe(201);
  const { evalId } = started.body;
  const paused = await finished(evalId, "paused");
  expect(paused.progress.finished).toBe(1);
  expect(paused.report.failing[0].failed[0]).toContain("timed out");
  // Paused means paused: nothing more starts while it waits.
  await new Promise((done) => setTimeout(done, 2_000));
  expect((await evalView(evalId)).progress.finished).toBe(1);

  expect((await api.call("POST", `/v1/evals/${evalId}/budget`, { json: {} })).status).toBe(202);
  const done = await finished(evalId);
  expect(done.report.models[0]).toMatchObject({ finished: 6, passed: 4 });
  const backtracks = done.report.failing.find(
    (failing: { caseId: string }) => failing.caseId === "backtracks",
  );
  expect(backtracks.failed[0]).toContain("took over 200 ms");
  expectProblem(await api.call("POST", `/v1/evals/${evalId}/cancel`), 409, "eval-ended");
  expect(existsSync(hostDir)).toBe(false);
  expect(await expectIntactTrials(done)).toHaveLength(6);
  // The checks' sandbox time is the tenant's tool time, as a tool call's is: the check that ran
  // into its 1 s timeout alone is a second (the runs' own tool calls take milliseconds). A
  // worker writes tool time within 2 s.
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  expect((await toolSecondsToday()) - toolSecondsBefore).toBeGreaterThanOrEqual(1);
}, 180_000);

test("bad requests are refused with what is wrong, and nothing starts", async () => {
  const talk = scenario(() => ({ text: "Fine." }));
  const base = { id: "c", prompt: `[scenario:${talk}] x` };
  const refused = await api.call("POST", "/v1/evals", {
    json: { suite: { cases: [{ ...base, settings: { limits: { maxTurns: -1 } } }] }, models: [GOOD] },
  });
  expectProblem(refused, 400, "invalid-request");
  expect(JSON.stringify(refused.body.errors)).toContain("suite.cases.0.limits.maxTurns");
  expectProblem(
    await api.call("POST", "/v1/evals", { json: { suite: { cases: [base] }, models: ["no-such-model"] } }),
    400,
    "invalid-request",
  );
  expectProblem(
    await api.call("POST", "/v1/evals", {
      json: { suite: { cases: [{ ...base, from: { sessionId: "nope", entryId: "abc" } }] }, models: [GOOD] },
    }),
    404,
    "session-not-found",
  );
  expectProblem(
    await api.call("POST", "/v1/evals", {
      json: {
        suite: { cases: [{ ...base, checks: [{ type: "file", path: "a", matches: "(" }] }] },
        models: [GOOD],
      },
    }),
    400,
    "invalid-request",
  );
  expectProblem(
    await api.call("POST", "/v1/evals", { json: { suite: { cases: [base, base] }, models: [GOOD] } }),
    422,
    "invalid-eval",
  );
  expectProblem(
    await api.call("POST", "/v1/evals", {
      json: {
        suite: { cases: Array.from({ length: 60 }, (_, i) => ({ ...base, id: `c${i}` })) },
        models: [GOOD],
        repeat: 100,
      },
    }),
    422,
    "invalid-eval",
  );
  expectProblem(await api.call("GET", "/v1/evals/ev0000000000000000"), 404, "eval-not-found");
  expect(modelCalls([talk])).toBe(0);
}, 60_000);

test("a case from a stored session's entry runs on that entry's files, not the session's last ones", async () => {
  const origin = api.sessionId();
  const edits = uniqueName("eval-origin");
  // Each request writes a.txt: "one" for the first, "two" for the second; then the model answers.
  api.stage.llm.addScenario(edits, {
    turns: [],
    after: (context) => {
      const last = context.request.messages.at(-1);
      if (last?.role !== "user") return { text: "Wrote it." };
      const content = last.text.includes("two") ? "two\n" : "one\n";
      return { toolCalls: [{ name: "write", arguments: { path: "a.txt", content } }] };
    },
  });
  const ref = { tenantId: api.tenants.a, sessionId: origin };
  for (const text of [`[scenario:${edits}] write one`, "now write two"]) {
    expect((await api.call("POST", `/v1/sessions/${origin}/messages`, { json: { text } })).status).toBe(202);
    expect((await api.stage.result(ref)).status).toBe("completed");
  }
  const entries = await api.stage.entries(ref);
  const secondRequest = entries.find(
    (entry) =>
      entry.type === "message" &&
      entry.message.role === "user" &&
      JSON.stringify(entry.message.content).includes("write two"),
  );
  if (!secondRequest?.parentId) throw new Error("no second request in the origin session");

  const talk = scenario(() => ({ text: "Looked." }));
  const suite = {
    cases: [
      {
        id: "from-entry",
        from: { sessionId: origin, entryId: secondRequest.parentId },
        prompt: `[scenario:${talk}] look`,
        checks: [
          { type: "file", path: "a.txt", contains: "one" },
          { type: "command", command: "grep -qx one a.txt" },
        ],
      },
    ],
  };
  const started = await api.call("POST", "/v1/evals", { json: { suite, models: [GOOD] } });
  expect(started.status).toBe(201);
  const view = await finished(started.body.evalId);
  expect(view.report.models[0]).toMatchObject({ finished: 1, passed: 1 });
  // The trial's session is a fork of the origin, which keeps its own last state.
  const trialSession = view.report.cases[0].results[0].sessions[0];
  const header = await api.stage.store.getHeader({ tenantId: api.tenants.a, sessionId: trialSession });
  expect(header?.parentSession).toBe(origin);
  await expectIntactTrials(view);
  await expectIntactSession(api.stage, ref);
}, 180_000);

test("a worker killed and the API replaced in the middle of an eval: every trial runs once and is judged once", async () => {
  const slow = scenario(() => ({
    toolCalls: [{ name: "bash", arguments: { command: "sleep 2; echo done > done.txt" } }],
  }));
  const suite = {
    cases: Array.from({ length: 3 }, (_, i) => ({
      id: `slow-${i}`,
      prompt: `[scenario:${slow}] case ${i}`,
      checks: [],
    })),
  };
  const started = await api.call("POST", "/v1/evals", {
    json: { suite, models: [GOOD], repeat: 2, concurrency: 2 },
  });
  expect(started.status).toBe(201);
  const { evalId } = started.body;
  await eventually(
    async () => ((await evalView(evalId)).progress.finished >= 1 ? true : undefined),
    120_000,
    "a first trial",
  );
  await worker.kill();
  worker = await api.stage.startWorker();
  // Another API process (same stores, same Temporal) reads the eval from here on.
  const other = api.callerWith({});
  const view = await finished(evalId, "completed", other);
  expect(view.report.models[0]).toMatchObject({ trials: 6, finished: 6 });
  const sessions = view.report.cases.flatMap(
    (row: { results: { sessions: string[] }[] }) => row.results[0]?.sessions ?? [],
  );
  expect(new Set(sessions).size).toBe(6);
  // Each trial's session is intact and holds one run: one request, no model answer stored twice.
  for (const sessionId of sessions) {
    const stored = await expectIntactSession(api.stage, { tenantId: api.tenants.a, sessionId });
    const users = stored.filter((entry) => entry.type === "message" && entry.message.role === "user");
    expect(users).toHaveLength(1);
  }
  // Two calls per trial, plus at most one retried call per trial cut by the kill.
  const calls = modelCalls([slow]);
  expect(calls).toBeGreaterThanOrEqual(12);
  expect(calls).toBeLessThanOrEqual(12 + 2);
}, 240_000);

test("a cancelled eval starts no more trials and aborts the runs still going", async () => {
  const slow = scenario(() => ({ toolCalls: [{ name: "bash", arguments: { command: "sleep 20" } }] }));
  const suite = {
    cases: Array.from({ length: 4 }, (_, i) => ({
      id: `slow-${i}`,
      prompt: `[scenario:${slow}] case ${i}`,
      checks: [],
    })),
  };
  const started = await api.call("POST", "/v1/evals", { json: { suite, models: [GOOD], concurrency: 2 } });
  expect(started.status).toBe(201);
  const { evalId } = started.body;
  // Both lanes' runs are in their bash calls.
  for (const sessionId of [`${evalId}-t0`, `${evalId}-t1`])
    await eventually(
      async () =>
        (await api.call("GET", `/v1/sessions/${sessionId}`)).body?.status === "running" ? true : undefined,
      60_000,
      `trial ${sessionId} running`,
    );
  expect((await api.call("POST", `/v1/evals/${evalId}/cancel`)).status).toBe(202);
  const view = await finished(evalId, "cancelled");
  expect(view.progress.finished).toBe(0);
  for (const sessionId of [`${evalId}-t0`, `${evalId}-t1`]) {
    const result = await api.stage.result({ tenantId: api.tenants.a, sessionId });
    expect(result.status).toBe("aborted");
    await expectIntactSession(api.stage, { tenantId: api.tenants.a, sessionId });
  }
  // The other trials never started.
  expectProblem(await api.call("GET", `/v1/sessions/${evalId}-t2`), 404, "session-not-found");
  expectProblem(await api.call("POST", `/v1/evals/${evalId}/cancel`), 409, "eval-ended");
}, 120_000);
