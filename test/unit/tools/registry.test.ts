import { z } from "zod";
import { builtinTools, runToolCall, toolSpecs, toToolResultMessage } from "../../../src/tools";
import { defineTool, textOutput } from "../../../src/tools/types";
import { makeSandbox, removeSandbox, type Sandbox, textOf } from "./helpers";

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await makeSandbox();
});
afterAll(async () => {
  await removeSandbox(sandbox);
});

describe("tool specs", () => {
  it("offers the seven built-in tools with JSON Schema parameters", () => {
    const specs = toolSpecs();
    expect(specs.map((spec) => spec.name)).toEqual(["read", "bash", "edit", "write", "grep", "find", "ls"]);
    const read = specs.find((spec) => spec.name === "read");
    expect(read?.parameters).toMatchObject({
      type: "object",
      required: ["path"],
      properties: {
        path: { type: "string" },
        offset: { type: "integer", minimum: 1 },
        limit: { type: "integer" },
      },
    });
    expect(read?.parameters).not.toHaveProperty("$schema");
    const edit = specs.find((spec) => spec.name === "edit");
    expect(edit?.parameters.required).toEqual(["path", "oldText", "newText"]);
  });

  it("assigns replay classes", () => {
    const classes = Object.fromEntries(builtinTools.map((tool) => [tool.name, tool.replay]));
    expect(classes).toEqual({
      read: "safe",
      grep: "safe",
      find: "safe",
      ls: "safe",
      write: "idempotent-with-check",
      edit: "idempotent-with-check",
      bash: "unsafe",
    });
  });
});

describe("runToolCall", () => {
  it("lists every validation problem and echoes the arguments", async () => {
    const out = await runToolCall({ name: "edit", arguments: { path: 7, oldText: "a" } }, sandbox.ctx);
    expect(out.isError).toBe(true);
    expect(textOf(out)).toBe(
      [
        'Invalid arguments for tool "edit":',
        "  - path: Invalid input: expected string, received number",
        "  - newText: Invalid input: expected string, received undefined",
        'Received arguments: {"path":7,"oldText":"a"}',
      ].join("\n"),
    );
  });

  it("reports an unknown tool with the available names", async () => {
    const out = await runToolCall({ name: "delete_everything", arguments: { all: true } }, sandbox.ctx);
    expect(out.isError).toBe(true);
    expect(textOf(out)).toContain(
      'Unknown tool "delete_everything". Available tools: read, bash, edit, write, grep, find, ls.',
    );
    expect(textOf(out)).toContain('Received arguments: {"all":true}');
  });

  it("never throws: unexpected exceptions become error results", async () => {
    const exploding = defineTool({
      name: "explode",
      description: "always throws",
      parameters: z.object({}),
      replay: "safe",
      async execute() {
        throw new TypeError("boom");
      },
    });
    const out = await runToolCall({ name: "explode", arguments: {} }, sandbox.ctx, [exploding]);
    expect(out).toEqual({ content: [{ type: "text", text: "explode failed: boom" }], isError: true });
  });

  it("does not start a tool when already aborted", async () => {
    const controller = new AbortController();
    controller.abort();
    const out = await runToolCall(
      { name: "write", arguments: { path: "x.txt", content: "x" } },
      { ...sandbox.ctx, signal: controller.signal },
    );
    expect(out.isError).toBe(true);
    expect(textOf(out)).toContain("aborted");
  });

  it("builds a toolResult message", () => {
    const call = { type: "toolCall" as const, id: "tc_1", name: "ls", arguments: {} };
    expect(toToolResultMessage(call, textOutput("a\nb", { count: 2 }), 5)).toEqual({
      role: "toolResult",
      toolCallId: "tc_1",
      toolName: "ls",
      content: [{ type: "text", text: "a\nb" }],
      details: { count: 2 },
      isError: false,
      timestamp: 5,
    });
  });
});
