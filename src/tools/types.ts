/**
 * The shape of a built-in tool: what the model is offered (name, description, JSON Schema),
 * how it runs (`execute` against a session workspace) and how it may be replayed after an
 * unknown outcome in a durable run.
 */
import { z } from "zod";
import type { ImageBlock, TextBlock, ToolSpec } from "../core/messages";
import type { ReplayClass } from "../core/tool-replay";
import type { SandboxPolicy } from "./sandbox";
import type { Workspace } from "./workspace";

export type { ReplayClass } from "../core/tool-replay";

/** Blocks a tool may return; the same blocks a toolResult message carries. */
export type ToolContentBlock = TextBlock | ImageBlock;

/** What `execute` produces. `details` is for the UI and the session, never sent to the model. */
export interface ToolOutput {
  content: ToolContentBlock[];
  details?: unknown;
  isError: boolean;
}

/** A partial result streamed while a tool runs (bash output so far). */
export interface ToolUpdate {
  content: ToolContentBlock[];
  details?: unknown;
}

export interface ToolContext {
  workspace: Workspace;
  /** How processes a tool starts are isolated and limited (bash). */
  sandbox: SandboxPolicy;
  /** Cancels the tool; long-running tools stop promptly and report "aborted". */
  signal?: AbortSignal;
  onUpdate?: (update: ToolUpdate) => void;
}

/** The zod schema every tool takes: an object of named arguments. */
export type ToolParameters = z.ZodObject;

export interface ToolDefinition<P extends ToolParameters = ToolParameters> {
  name: string;
  description: string;
  parameters: P;
  replay: ReplayClass;
  /**
   * Runs with arguments already validated against `parameters`. May throw (a `ToolError` for
   * expected failures); `runToolCall` turns any throw into an error result.
   */
  execute(args: z.output<P>, ctx: ToolContext): Promise<ToolOutput>;
}

/** Identity helper that keeps a tool's argument type tied to its schema. */
export function defineTool<P extends ToolParameters>(definition: ToolDefinition<P>): ToolDefinition<P> {
  return definition;
}

/** Specs already built: converting a zod schema to JSON Schema costs about a millisecond a tool. */
const specs = new WeakMap<ToolDefinition, ToolSpec>();

/**
 * The provider-facing description of a tool: its zod schema as a JSON Schema object. Built once
 * per definition and shared: callers must not modify it.
 */
export function toolSpec(tool: ToolDefinition): ToolSpec {
  let spec = specs.get(tool);
  if (!spec) {
    const { $schema: _dialect, ...parameters } = z.toJSONSchema(tool.parameters, { io: "input" });
    spec = { name: tool.name, description: tool.description, parameters };
    specs.set(tool, spec);
  }
  return spec;
}

export function textOutput(text: string, details?: unknown): ToolOutput {
  return { content: [{ type: "text", text }], details, isError: false };
}

export function errorOutput(text: string, details?: unknown): ToolOutput {
  return { content: [{ type: "text", text }], details, isError: true };
}
