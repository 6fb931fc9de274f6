import { runSettingsFrom } from "../../../src/api/run-settings";
import { messageBodySchema } from "../../../src/api/schemas";
import { DEFAULT_RUN_SETTINGS } from "../../../src/contracts/runs";
import {
  availableAgents,
  childSessionId,
  childTools,
  EXPLORE_AGENT,
  MAX_SUB_AGENT_DEPTH,
  parseTaskArguments,
  taskToolSpec,
} from "../../../src/core/agents";
import { ID_PATTERN } from "../../../src/core/ids";
import { loadCatalog } from "../../../src/providers/models";
import { childSettings } from "../../../src/workflows/run/task-calls";

describe("sub-agent definitions", () => {
  test("a child never gets a tool its parent lacks, nor task unless its definition names it", () => {
    expect(childTools(["read", "ls", "task"], EXPLORE_AGENT)).toEqual(["read", "ls"]);
    expect(childTools(["read", "bash", "task"], { name: "x", description: "x" })).toEqual(["read", "bash"]);
    expect(childTools(["read"], { name: "x", description: "x", tools: ["bash", "read"] })).toEqual(["read"]);
    const lead = { name: "lead", description: "delegates", tools: ["read", "task"] };
    expect(childTools(["read", "task"], lead)).toEqual(["read", "task"]);
    expect(childTools(["read"], lead)).toEqual(["read"]);
  });

  test("nesting is bounded: a child at the deepest level gets no task", () => {
    const lead = { name: "lead", description: "delegates", tools: ["read", "task"] };
    expect(childTools(["read", "task"], lead, MAX_SUB_AGENT_DEPTH - 1)).toContain("task");
    expect(childTools(["read", "task"], lead, MAX_SUB_AGENT_DEPTH)).toEqual(["read"]);
  });

  test("a child without a model of its own takes its parent's models, fallbacks included; one with its own has only it", () => {
    const parent = { ...DEFAULT_RUN_SETTINGS, model: "a", fallbackModels: ["b", "c"] };
    const share = { maxCostUsd: 0, maxTokens: 0, maxTurns: 5 };
    expect(childSettings(parent, { name: "p", description: "p" }, share)).toMatchObject({
      model: "a",
      fallbackModels: ["b", "c"],
    });
    const own = childSettings(parent, { name: "p", description: "p", model: "d" }, share);
    expect(own.model).toBe("d");
    expect(own.fallbackModels).toBeUndefined();
  });

  test("child settings narrow the parent's: model, prompt, turns, budgets of its share", () => {
    const parent = {
      ...DEFAULT_RUN_SETTINGS,
      systemPrompt: "parent prompt",
      tools: ["read", "bash", "task"],
      limits: { ...DEFAULT_RUN_SETTINGS.limits, maxCostUsd: 1, maxTokens: 110_000 },
      agents: [{ name: "a", description: "a" }],
      chatReply: { kind: "slack" as const, channel: "C", threadTs: "1" },
    };
    const share = { maxCostUsd: 0.25, maxTokens: 3_333, maxTurns: 7 };
    const child = childSettings(parent, { ...EXPLORE_AGENT, model: "other", maxTurns: 3 }, share);
    expect(child).toMatchObject({
      model: "other",
      systemPrompt: EXPLORE_AGENT.systemPrompt,
      tools: ["read"],
    });
    // The share's budgets, not the parent's: its token budget is no longer the parent's whole one.
    expect(child.limits).toMatchObject({ maxTurns: 3, maxCostUsd: 0.25, maxTokens: 3_333 });
    expect(child.agents).toBeUndefined();
    expect(child.chatReply).toBeUndefined();
    // A child that may delegate keeps the parent's agents.
    const lead = childSettings(parent, { name: "lead", description: "l", tools: ["read", "task"] }, share);
    expect(lead.tools).toEqual(["read", "task"]);
    expect(lead.agents).toEqual(parent.agents);
    expect(childSettings(parent, { name: "p", description: "p" }, share).systemPrompt).toBeUndefined();
    // No token budget in the share (the parent has none): the parent's "none" stays.
    const unbudgeted = { ...parent, limits: DEFAULT_RUN_SETTINGS.limits };
    expect(
      childSettings(unbudgeted, EXPLORE_AGENT, { ...share, maxTokens: 0 }).limits.maxTokens,
    ).toBeUndefined();
  });

  test("a child gets at most the turns of its share, and at least one", () => {
    const agent = { ...EXPLORE_AGENT, maxTurns: 10 };
    const share = (maxTurns: number) => ({ maxCostUsd: 0, maxTokens: 0, maxTurns });
    expect(childSettings(DEFAULT_RUN_SETTINGS, agent, share(4)).limits.maxTurns).toBe(4);
    expect(childSettings(DEFAULT_RUN_SETTINGS, agent, share(0)).limits.maxTurns).toBe(1);
    expect(childSettings(DEFAULT_RUN_SETTINGS, agent, share(50)).limits.maxTurns).toBe(10);
  });

  test("a child's session id is a valid id, the same for the same call, another for another call", () => {
    const long = "s".repeat(128);
    for (const parent of ["session-1", long]) {
      const id = childSessionId(parent, "call|weird/id:1");
      expect(id).toMatch(ID_PATTERN);
      expect(childSessionId(parent, "call|weird/id:1")).toBe(id);
      expect(childSessionId(parent, "call|weird/id:2")).not.toBe(id);
    }
    expect(childSessionId(`${long}a`.slice(1), "c")).not.toBe(childSessionId(`${long}b`.slice(1), "c"));
  });

  test("task arguments the model got wrong are readable errors", () => {
    const agents = availableAgents([]);
    expect(parseTaskArguments('{"agent":"explore","prompt":"look"}', agents)).toMatchObject({
      ok: true,
      prompt: "look",
    });
    expect(parseTaskArguments('{"agent":"explore","prompt":"lo…', agents)).toMatchObject({ ok: false });
    expect(parseTaskArguments('{"agent":"x","prompt":"p"}', agents)).toEqual({
      ok: false,
      error: 'Unknown agent "x". Available agents: explore.',
    });
    expect(parseTaskArguments('{"agent":"explore","prompt":" "}', agents)).toMatchObject({ ok: false });
  });

  test("run definitions come first and replace a built-in of the same name; the spec lists them", () => {
    const agents = availableAgents([
      { name: "explore", description: "mine" },
      { name: "fix", description: "fixes" },
    ]);
    expect(agents.map((agent) => [agent.name, agent.description])).toEqual([
      ["explore", "mine"],
      ["fix", "fixes"],
    ]);
    const spec = taskToolSpec(agents);
    expect(spec.description).toContain("- fix: fixes");
    expect(spec.parameters).toMatchObject({ required: ["agent", "prompt"] });
  });

  test("the message body takes task and agents; an agent's model is checked like the run's", () => {
    const modelIds = loadCatalog()
      .list()
      .map((model) => model.id);
    const schema = messageBodySchema({ modelIds, allowDirectoryWorkspaces: false });
    const settings = runSettingsFrom(
      schema.parse({
        text: "x",
        tools: ["read", "task"],
        agents: [{ name: "r", description: "reads", tools: ["read"] }],
      }),
    );
    expect(settings).toMatchObject({ tools: ["read", "task"], agents: [{ name: "r", tools: ["read"] }] });
    expect(() =>
      schema.parse({ text: "x", agents: [{ name: "r", description: "d", model: "nope" }] }),
    ).toThrow();
    // An agent may name task (it delegates in turn), but no tool the deployment lacks.
    expect(
      schema.parse({ text: "x", agents: [{ name: "r", description: "d", tools: ["task"] }] }).agents,
    ).toEqual([{ name: "r", description: "d", tools: ["task"] }]);
    expect(() =>
      schema.parse({ text: "x", agents: [{ name: "r", description: "d", tools: ["launch-missiles"] }] }),
    ).toThrow();
    expect(() =>
      schema.parse({
        text: "x",
        agents: [
          { name: "r", description: "d" },
          { name: "r", description: "e" },
        ],
      }),
    ).toThrow();
  });
});
