/** Checking a tool call's arguments against the tool's schema before it runs. */
import type { z } from "zod";
import type { ToolDefinition, ToolParameters } from "./types";

export type ValidationResult<T> = { ok: true; value: T } | { ok: false; problems: string[] };

function describeIssue(issue: z.core.$ZodIssue): string {
  const where = issue.path.length > 0 ? issue.path.map(String).join(".") : "(arguments)";
  return `${where}: ${issue.message}`;
}

/** Validates `args` against the tool's parameter schema; never throws. */
export function validateArguments<P extends ToolParameters>(
  tool: ToolDefinition<P>,
  args: unknown,
): ValidationResult<z.output<P>> {
  const parsed = tool.parameters.safeParse(args) as z.ZodSafeParseResult<z.output<P>>;
  if (parsed.success) return { ok: true, value: parsed.data };
  return { ok: false, problems: parsed.error.issues.map(describeIssue) };
}

const MAX_ECHOED_ARGUMENT_CHARS = 2000;

/** Echo of the received arguments, capped so a huge payload does not flood the context. */
export function describeReceived(args: unknown): string {
  let received: string;
  try {
    received = JSON.stringify(args) ?? String(args);
  } catch {
    received = String(args);
  }
  if (received.length > MAX_ECHOED_ARGUMENT_CHARS) {
    received = `${received.slice(0, MAX_ECHOED_ARGUMENT_CHARS)}… (${received.length} chars)`;
  }
  return `Received arguments: ${received}`;
}

/** The error text the model reads for invalid arguments: each problem, then what it sent. */
export function formatValidationError(toolName: string, problems: string[], args: unknown): string {
  return [
    `Invalid arguments for tool "${toolName}":`,
    ...problems.map((problem) => `  - ${problem}`),
    describeReceived(args),
  ].join("\n");
}
