/**
 * `--agents FILE`: the sub-agents a run may delegate to with the `task` tool, read from a JSON
 * file (an array of `{name, description, systemPrompt?, model?, tools?, maxTurns?}`, as the API's
 * `agents`). The API checks the definitions; this only reads the file and says what is wrong with
 * it in terms of the command line.
 */
import { readFileSync } from "node:fs";
import { UsageError } from "../../api-client/client";
import { TASK_TOOL_NAME } from "../../core/agents";
import type { MessageBody } from "./message-body";

export type AgentsOption = NonNullable<MessageBody["agents"]>;

/**
 * The definitions in `path`. A run offers them only with `task` among its tools, so `tools` (the
 * `--tools` list, undefined when not given) must name it: agents that could never be called are a
 * usage error, not a silently ignored option.
 */
export function agentsFrom(path: string, tools: readonly string[] | undefined): AgentsOption {
  if (!tools?.includes(TASK_TOOL_NAME))
    throw new UsageError(
      `--agents needs the ${TASK_TOOL_NAME} tool: add it to --tools (e.g. --tools read,ls,task)`,
    );
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new UsageError(`--agents: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? error})`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError(`--agents: ${path} is not JSON`);
  }
  if (!Array.isArray(parsed))
    throw new UsageError(
      `--agents: ${path} must hold a JSON array of agent definitions {name, description, …}`,
    );
  // Each definition's fields are the API's to check (it answers 400 with the field at fault).
  return parsed as AgentsOption;
}
