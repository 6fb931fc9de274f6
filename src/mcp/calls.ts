/**
 * Listing a server's tools and calling one, on a connected client: what the run records and what
 * the model reads. A call never throws for the server's sake — a timeout, a crash (the connection
 * closed mid-call), an abort or a protocol error become error results.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { MAX_OUTPUT_BYTES } from "../tools/truncate";
import { errorOutput, type ToolContentBlock, type ToolOutput } from "../tools/types";
import { messageOf } from "./connections";
import { offeredToModel, replayClassOf } from "./tool-names";
import type { McpServerSettings, McpToolEntry } from "./types";

/** Default wait for one call's answer. */
export const DEFAULT_MCP_TIMEOUT_MS = 60_000;
/** Longest description passed to the model (servers may write essays). */
const MAX_DESCRIPTION_CHARS = 2_000;

/** Every tool of the server (all pages), with its replay class; tools whose names no provider accepts are left out. */
export async function listServerTools(client: Client, server: McpServerSettings): Promise<McpToolEntry[]> {
  const entries: McpToolEntry[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor ? { cursor } : {}, {
      timeout: server.timeoutMs ?? DEFAULT_MCP_TIMEOUT_MS,
    });
    for (const tool of page.tools) {
      if (!offeredToModel(server.name, tool.name)) continue;
      entries.push({
        tool: tool.name,
        description: (tool.description ?? tool.title ?? tool.name).slice(0, MAX_DESCRIPTION_CHARS),
        inputSchema: tool.inputSchema as Record<string, unknown>,
        replay: replayClassOf(tool.name, tool.annotations, server.replay),
      });
    }
    cursor = page.nextCursor;
  } while (cursor);
  return entries;
}

export interface McpCallOptions {
  signal: AbortSignal;
  timeoutMs: number;
  /** A progress notification from the server (`message` when it sent one). */
  onProgress: (progress: { progress: number; total?: number; message?: string }) => void;
}

/** Calls `tool` with `args`; the result (or the failure) as a tool output. */
export async function callServerTool(
  client: Client,
  tool: string,
  args: Record<string, unknown>,
  options: McpCallOptions,
): Promise<ToolOutput> {
  try {
    const result = await client.callTool({ name: tool, arguments: args }, undefined, {
      signal: options.signal,
      timeout: options.timeoutMs,
      onprogress: (progress) => options.onProgress(progress),
    });
    return toToolOutput(result);
  } catch (error) {
    if (options.signal.aborted) return errorOutput("Operation aborted", { aborted: true });
    if (error instanceof McpError && error.code === ErrorCode.RequestTimeout)
      return errorOutput(`The MCP server did not answer within ${options.timeoutMs / 1000} seconds.`, {
        timedOut: true,
      });
    if (error instanceof McpError && error.code === ErrorCode.ConnectionClosed)
      return errorOutput("The MCP server closed the connection during the call (it may have crashed).", {
        serverClosed: true,
      });
    return errorOutput(`The MCP call failed: ${messageOf(error)}`);
  }
}

/** A content block of a call's result, as far as this mapping reads it. */
type ResultBlock = { type: string; [key: string]: unknown };

/**
 * A `tools/call` result as a tool output: text and images as they are, embedded resources as
 * their text (an image blob as an image), links and audio as a line saying what they are,
 * structured content as JSON text when the server sent no text (and in `details` always).
 * Text beyond MAX_OUTPUT_BYTES is cut with a notice.
 */
function toToolOutput(result: Record<string, unknown>): ToolOutput {
  const blocks = (Array.isArray(result.content) ? result.content : []) as ResultBlock[];
  const content: ToolContentBlock[] = blocks.flatMap((block): ToolContentBlock[] => {
    if (block.type === "text") return [{ type: "text", text: String(block.text ?? "") }];
    if (block.type === "image")
      return [{ type: "image", data: String(block.data ?? ""), mimeType: String(block.mimeType ?? "") }];
    if (block.type === "resource") {
      const resource = (block.resource ?? {}) as {
        uri?: string;
        text?: string;
        blob?: string;
        mimeType?: string;
      };
      if (typeof resource.text === "string")
        return [{ type: "text", text: `[resource ${resource.uri}]\n${resource.text}` }];
      if (typeof resource.blob === "string" && resource.mimeType?.startsWith("image/"))
        return [{ type: "image", data: resource.blob, mimeType: resource.mimeType }];
      return [
        { type: "text", text: `[resource ${resource.uri}: ${resource.mimeType ?? "binary"}, not shown]` },
      ];
    }
    if (block.type === "resource_link")
      return [
        { type: "text", text: `[resource link ${String(block.name ?? "")}: ${String(block.uri ?? "")}]` },
      ];
    return [{ type: "text", text: `[${block.type} content, not shown]` }];
  });
  const structured = result.structuredContent;
  if (structured !== undefined && !content.some((block) => block.type === "text"))
    content.push({ type: "text", text: JSON.stringify(structured) });
  return {
    content: capText(content),
    isError: result.isError === true,
    ...(structured !== undefined ? { details: { structuredContent: structured } } : {}),
  };
}

function capText(content: ToolContentBlock[]): ToolContentBlock[] {
  let budget = MAX_OUTPUT_BYTES;
  return content.map((block) => {
    if (block.type !== "text") return block;
    const bytes = Buffer.byteLength(block.text);
    if (bytes <= budget) {
      budget -= bytes;
      return block;
    }
    const kept = Buffer.from(block.text).subarray(0, Math.max(0, budget)).toString();
    budget = 0;
    return {
      type: "text",
      text: `${kept}\n[MCP result truncated: ${bytes} bytes, the first ${kept.length} characters shown]`,
    };
  });
}
