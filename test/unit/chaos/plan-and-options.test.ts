/** The chaos plan is a function of the options (the seed above all); options are validated. */
import OpenAI from "openai";
import { startLocalLlmServer } from "../../../src/providers/local-server";
import { CHAOS_PRESETS, ChaosUsageError, parseChaosOptions } from "../../chaos/options";
import { BUDGETED_CALL, makeChaosPlan } from "../../chaos/plan";
import { callTagOf, registerSessionScenario } from "../../chaos/scenario";

describe("parseChaosOptions", () => {
  it("takes the long form by default and the short form with --short", () => {
    expect(parseChaosOptions([])).toEqual(CHAOS_PRESETS.long);
    expect(parseChaosOptions(["--short"])).toEqual(CHAOS_PRESETS.short);
  });

  it("lets flags override the environment, which overrides the preset", () => {
    const options = parseChaosOptions(["--short", "--seed", "7", "--max-minutes=3"], {
      CHAOS_SEED: "5",
      CHAOS_KILLS: "9",
    });
    expect(options).toMatchObject({ form: "short", seed: 7, kills: 9, durationCapMs: 180_000, runs: 8 });
  });

  it("takes the runner figures from flags and the environment", () => {
    const options = parseChaosOptions(["--short", "--runner-kills", "6"], { CHAOS_RUNNER_SESSIONS: "2" });
    expect(options).toMatchObject({ runnerSessions: 2, runnerKills: 6 });
  });

  it("takes the API restarts and budgeted sessions from flags and the environment", () => {
    const options = parseChaosOptions(["--short", "--api-restarts", "2"], { CHAOS_BUDGETED_SESSIONS: "4" });
    expect(options).toMatchObject({ apiRestarts: 2, budgetedSessions: 4 });
    expect(CHAOS_PRESETS.short.apiRestarts).toBeLessThanOrEqual(1);
  });

  it.each([
    [["--runs", "0"], "--runs must be an integer >= 1"],
    [["--kills", "many"], '--kills must be an integer >= 0, got "many"'],
    [["--kils", "3"], 'unknown argument "--kils"'],
    [["--seed"], "--seed needs a value"],
    [["--runs", "2", "--aborts", "3"], "--aborts (3) cannot exceed --runs (2)"],
    [
      ["--short", "--runs", "2", "--aborts", "0", "--runner-sessions", "3"],
      "--runner-sessions (3) cannot exceed --runs (2)",
    ],
    [["--runner-sessions", "0"], "--runner-kills needs --runner-sessions > 0"],
    [
      ["--short", "--aborts", "2", "--budgeted-sessions", "7"],
      "--budgeted-sessions (7) cannot exceed the sessions not aborted (6)",
    ],
  ])("refuses %j", (argv, message) => {
    expect(() => parseChaosOptions(argv)).toThrow(ChaosUsageError);
    expect(() => parseChaosOptions(argv)).toThrow(message);
  });
});

describe("makeChaosPlan", () => {
  const options = { ...CHAOS_PRESETS.short, temporalRestarts: 1 };

  it("is the same plan for the same seed, and another for another seed", () => {
    expect(makeChaosPlan(options)).toEqual(makeChaosPlan({ ...options }));
    expect(makeChaosPlan({ ...options, seed: 2 })).not.toEqual(makeChaosPlan(options));
  });

  it("plans what the options ask for, in time order", () => {
    const plan = makeChaosPlan(options);
    const count = (kind: string) => plan.faults.filter((fault) => fault.kind === kind).length;
    expect(plan.sessions).toHaveLength(options.runs);
    expect(plan.sessions.filter((session) => session.abortAfterMs !== undefined)).toHaveLength(
      options.aborts,
    );
    expect([count("kill"), count("temporal_restart"), count("s3_outage")]).toEqual([options.kills, 1, 1]);
    expect(count("secondary_start")).toBe(count("secondary_stop"));
    const times = plan.faults.map((fault) => fault.atMs);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(new Set(plan.sessions.map((session) => session.sessionId)).size).toBe(options.runs);
  });
});

describe("runner kills in the plan", () => {
  const options = { ...CHAOS_PRESETS.short, runnerKills: 6 };
  const runnerKills = (plan: ReturnType<typeof makeChaosPlan>) =>
    plan.faults.flatMap((fault) => (fault.kind === "runner_kill" ? [fault] : []));

  it("puts the asked number of sessions on the runner environment", () => {
    const plan = makeChaosPlan(options);
    expect(plan.sessions.filter((session) => session.onRunner)).toHaveLength(options.runnerSessions);
  });

  it("kills runners alone, with a worker kill and with an S3 outage, by turns", () => {
    const plan = makeChaosPlan(options);
    const kills = runnerKills(plan);
    expect(kills.map((kill) => kill.during).sort()).toEqual([
      "alone",
      "alone",
      "s3_outage",
      "s3_outage",
      "worker_kill",
      "worker_kill",
    ]);
    const last = Math.max(...plan.faults.filter((fault) => fault.kind === "kill").map((fault) => fault.atMs));
    for (const kill of kills) expect(kill.atMs).toBeLessThanOrEqual(last);
  });

  it("puts the first runner kill with an outage just before the plan's outage; the next brings its own", () => {
    const plan = makeChaosPlan(options);
    const outageAt = plan.faults.findIndex((fault) => fault.kind === "s3_outage");
    const before = plan.faults[outageAt - 1];
    expect(before).toMatchObject({ kind: "runner_kill", during: "s3_outage" });
    expect(before?.atMs).toBe((plan.faults[outageAt]?.atMs ?? 0) - 1);
    expect(before && "outageMs" in before).toBe(false);
    const own = runnerKills(plan).filter((kill) => kill.outageMs !== undefined);
    expect(own).toEqual([expect.objectContaining({ during: "s3_outage", outageMs: options.s3OutageMs })]);
  });

  it("leaves the sessions and the other faults of a seed as they were without runners", () => {
    const plain = { ...options, apiRestarts: 0, budgetedSessions: 0 };
    const without = makeChaosPlan({ ...plain, runnerSessions: 0, runnerKills: 0 });
    const withRunners = makeChaosPlan(plain);
    expect(withRunners.sessions.map(({ onRunner: _, ...session }) => session)).toEqual(without.sessions);
    expect(withRunners.faults.filter((fault) => fault.kind !== "runner_kill")).toEqual(without.faults);
  });
});

describe("API restarts and budgeted sessions in the plan", () => {
  const options = { ...CHAOS_PRESETS.short, apiRestarts: 3, budgetedSessions: 5 };

  it("plans the API restarts inside the faults' span, and leaves the rest of a seed's plan as it was", () => {
    const plan = makeChaosPlan(options);
    const restarts = plan.faults.filter((fault) => fault.kind === "api_restart");
    expect(restarts).toHaveLength(3);
    const without = makeChaosPlan({ ...options, apiRestarts: 0, budgetedSessions: 0 });
    expect(plan.faults.filter((fault) => fault.kind !== "api_restart")).toEqual(without.faults);
    expect(plan.sessions.map(({ budget: _, steerAfterMs: __, ...session }) => session)).toEqual(
      without.sessions.map(({ steerAfterMs: _, ...session }) => session),
    );
  });

  it("gives budgets to sessions never aborted nor steered, within the drawn range", () => {
    const budgeted = makeChaosPlan(options).sessions.filter((session) => session.budget);
    expect(budgeted).toHaveLength(5);
    for (const session of budgeted) {
      const budget = session.budget as NonNullable<typeof session.budget>;
      expect(session.abortAfterMs).toBeUndefined();
      expect(session.steerAfterMs).toBeUndefined();
      expect([2, 3]).toContain(budget.parallelTasks);
      expect(budget.maxCostUsd > 0 || budget.maxTokens > 0).toBe(true);
      expect(budget.calls).toBeGreaterThanOrEqual(2 + budget.parallelTasks / 2);
      expect(budget.calls).toBeLessThanOrEqual(session.toolTurns + 2 * budget.parallelTasks + 1.5);
      if (budget.maxTokens > 0)
        expect(budget.maxTokens).toBe(Math.round(budget.calls * BUDGETED_CALL.tokens));
    }
  });
});

describe("the chaos scenario", () => {
  it("has a budgeted session's second turn start parallel sub-agents, every answer with the scripted usage", async () => {
    const llm = await startLocalLlmServer();
    try {
      const [session] = makeChaosPlan({ ...CHAOS_PRESETS.short, runs: 1, aborts: 0 }).sessions;
      if (!session) throw new Error("no session planned");
      const budget = { parallelTasks: 3 as const, maxCostUsd: 0.01, maxTokens: 0, calls: 3.33 };
      registerSessionScenario(llm, { ...session, modelLatencyMs: 0, toolTurns: 2, budget });
      const openai = new OpenAI({ apiKey: "k", baseURL: llm.openaiBaseURL, maxRetries: 0 });
      const prompt = { role: "user" as const, content: `[scenario:${session.scenario}] start` };
      const tools = [
        { type: "function" as const, function: { name: "read", parameters: { type: "object" } } },
      ];
      const first = await openai.chat.completions.create({ model: "local-chat", messages: [prompt], tools });
      const second = await openai.chat.completions.create({
        model: "local-chat",
        messages: [prompt, { role: "assistant", content: "step 1" }],
        tools,
      });
      const tasks = second.choices[0]?.message.tool_calls?.filter(
        (call) => call.type === "function" && call.function.name === "task",
      );
      expect(tasks).toHaveLength(3);
      for (const reply of [first, second])
        expect(reply.usage).toMatchObject({
          prompt_tokens: BUDGETED_CALL.input,
          completion_tokens: BUDGETED_CALL.output,
        });
    } finally {
      await llm.close();
    }
  });

  it("tags each answer with the digest the LLM server journals for its request", async () => {
    const llm = await startLocalLlmServer();
    try {
      const [session] = makeChaosPlan({ ...CHAOS_PRESETS.short, runs: 1, aborts: 0 }).sessions;
      if (!session) throw new Error("no session planned");
      registerSessionScenario(llm, { ...session, modelLatencyMs: 0 });
      const openai = new OpenAI({ apiKey: "k", baseURL: llm.openaiBaseURL, maxRetries: 0 });
      const reply = await openai.chat.completions.create({
        model: "local-chat",
        messages: [{ role: "user", content: `[scenario:${session.scenario}] start` }],
        tools: [{ type: "function", function: { name: "read", parameters: { type: "object" } } }],
      });
      const [call] = llm.journal();
      expect(callTagOf(reply.choices[0]?.message.content ?? "")).toBe(call?.digest);
      expect(reply.choices[0]?.message.tool_calls?.length).toBeGreaterThan(0);
    } finally {
      await llm.close();
    }
  });
});
