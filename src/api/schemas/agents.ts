/**
 * The sub-agents a run may delegate to with the `task` tool (src/core/agents.ts), as a message
 * body names them. An agent's model is checked like the run's own (the caller passes that schema);
 * its tools are built-in tools and `task` (an agent that delegates in turn, up to
 * MAX_SUB_AGENT_DEPTH), and the run keeps only those the parent has.
 */
import { z } from "@hono/zod-openapi";
import { TASK_TOOL_NAME } from "../../core/agents";
import { builtinTools } from "../../tools/index";

const MAX_AGENTS = 20;
const MAX_AGENT_DESCRIPTION_CHARS = 2_000;
const MAX_AGENT_SYSTEM_PROMPT_CHARS = 200_000;
const MAX_AGENT_TURNS = 1_000;

const builtinToolNames = builtinTools.map((tool) => tool.name) as [string, ...string[]];

/** The tools a run may be given: the built-ins, and `task` (the sub-agents). */
export const RUN_TOOL_NAMES = [...builtinToolNames, TASK_TOOL_NAME] as [string, ...string[]];

/** A run's agent definitions; `model` is the schema the run's own model is checked by. */
export function agentDefinitionsSchema(model: z.ZodType<string>) {
  return z
    .array(
      z
        .object({
          name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
          description: z.string().min(1).max(MAX_AGENT_DESCRIPTION_CHARS),
          systemPrompt: z.string().max(MAX_AGENT_SYSTEM_PROMPT_CHARS).optional(),
          model: model.optional(),
          tools: z.array(z.enum(RUN_TOOL_NAMES)).max(RUN_TOOL_NAMES.length).optional(),
          maxTurns: z.number().int().min(1).max(MAX_AGENT_TURNS).optional(),
          workspace: z.enum(["parent", "fork"]).optional().openapi({
            description:
              '"parent" (default): the agent\'s edits are in the caller\'s workspace when the task returns; "fork": they stay in the agent\'s own session',
          }),
        })
        .strict()
        .openapi("AgentDefinition"),
    )
    .max(MAX_AGENTS)
    .refine((agents) => new Set(agents.map((agent) => agent.name)).size === agents.length, {
      message: "agent names must be unique",
    })
    .openapi({
      // JSON Schema cannot say "names differ": it says no two agents are the same, the server checks names.
      uniqueItems: true,
      description:
        'Agents the `task` tool may delegate to (with "task" in tools), besides the built-in `explore`; an agent of that name replaces it. A child gets only the tools its parent has (docs/tools.md, "task").',
    });
}
