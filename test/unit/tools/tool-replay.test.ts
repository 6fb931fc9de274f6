import { MUTATING_TOOLS, TOOL_REPLAY_CLASSES } from "../../../src/core/tool-replay";
import { builtinTools } from "../../../src/tools";

test("every built-in tool has its replay class in the one table, and takes it from there", () => {
  expect(builtinTools.map((tool) => tool.name).sort()).toEqual(Object.keys(TOOL_REPLAY_CLASSES).sort());
  for (const tool of builtinTools) {
    expect(tool.replay).toBe(TOOL_REPLAY_CLASSES[tool.name as keyof typeof TOOL_REPLAY_CLASSES]);
  }
});

test("the tools that may change the workspace are those not safe to re-run", () => {
  expect([...MUTATING_TOOLS].sort()).toEqual(["bash", "edit", "write"]);
});
