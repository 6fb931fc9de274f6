/**
 * The built-in tools and the single entry point that runs a tool call: lookup, argument
 * validation, execution. Contract: `runToolCall` never throws; every failure (unknown tool,
 * invalid arguments, path refused, tool error, unexpected exception, abort) becomes an error
 * result the model can read.
 */
import type { ToolCallBlock, ToolResultMessage, ToolSpec } from "../core/messages";
import { bashTool } from "./bash";
import { editTool } from "./edit";
import { findTool } from "./find";
import { grepTool } from "./grep";
import { lsTool } from "./ls";
import { readTool } from "./read";
import { ToolError } from "./tool-error";
import { errorOutput, type ToolContext, type ToolDefinition, type ToolOutput, toolSpec } from "./types";
import { describeReceived, formatValidationError, validateArguments } from "./validate";
import { writeTool } from "./write";

export * from "./types";
export {
  acquireWorkspaceLock,
  prepareWorkspace,
  type Workspace,
  WorkspaceBusyError,
  type WorkspaceLock,
  type WorkspaceSource,
  WorkspaceSourceError,
  workspaceFor,
} from "./workspace";
export { WorkspacePathError } from "./workspace-fs";

export const builtinTools: readonly ToolDefinition[] = [
  readTool,
  bashTool,
  editTool,
  writeTool,
  grepTool,
  findTool,
  lsTool,
];

/** Provider-facing specs of the given tools (all built-ins by default). */
export function toolSpecs(tools: readonly ToolDefinition[] = builtinTools): ToolSpec[] {
  return tools.map(toolSpec);
}

export function toolNamed(
  name: string,
  tools: readonly ToolDefinition[] = builtinTools,
): ToolDefinition | undefined {
  return tools.find((tool) => tool.name === name);
}

/** Runs one tool call in the context's workspace. Never throws; errors become error results. */
export async function runToolCall(
  toolCall: Pick<ToolCallBlock, "name" | "arguments">,
  ctx: ToolContext,
  tools: readonly ToolDefinition[] = builtinTools,
): Promise<ToolOutput> {
  const tool = toolNamed(toolCall.name, tools);
  if (!tool) {
    const available = tools.map((candidate) => candidate.name).join(", ");
    return errorOutput(
      `Unknown tool "${toolCall.name}". Available tools: ${available}.\n${describeReceived(toolCall.arguments)}`,
    );
  }
  const validated = validateArguments(tool, toolCall.arguments);
  if (!validated.ok)
    return errorOutput(formatValidationError(tool.name, validated.problems, toolCall.arguments));
  if (ctx.signal?.aborted) return errorOutput("Operation aborted", { aborted: true });
  try {
    return await tool.execute(validated.value, ctx);
  } catch (error) {
    if (error instanceof ToolError) return errorOutput(error.message, error.details);
    const message = error instanceof Error ? error.message : String(error);
    return errorOutput(`${tool.name} failed: ${message}`);
  }
}

/** The toolResult message for a call and its output. */
export function toToolResultMessage(
  toolCall: ToolCallBlock,
  output: ToolOutput,
  timestamp: number,
): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId: toolCall.id,
    toolName: toolCall.name,
    content: output.content,
    ...(output.details !== undefined ? { details: output.details } : {}),
    isError: output.isError,
    timestamp,
  };
}
