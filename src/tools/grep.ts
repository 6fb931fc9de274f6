import type { Stats } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import * as posixPath from "node:path/posix";
import picomatch from "picomatch";
import { z } from "zod";
import { TOOL_REPLAY_CLASSES } from "../core/tool-replay";
import { looksBinary, MAX_EDIT_FILE_BYTES } from "./files";
import { ToolError } from "./tool-error";
import { explain, layerPath, withWorkspaceFs } from "./tool-fs";
import {
  DEFAULT_GREP_LIMIT,
  listing,
  MAX_GREP_LINE_CHARS,
  MAX_OUTPUT_BYTES,
  notices,
  truncateLine,
} from "./truncate";
import { defineTool, textOutput } from "./types";
import { assertConfinedGlob, walk } from "./walk";
import { errorCode } from "./workspace-fs";

const GrepParameters = z.object({
  pattern: z.string().min(1).describe("Search pattern (JavaScript regular expression, or literal string)"),
  path: z.string().optional().describe("Directory or file to search (default: the workspace root)"),
  glob: z.string().optional().describe("Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'"),
  ignoreCase: z.boolean().optional().describe("Case-insensitive search (default: false)"),
  literal: z
    .boolean()
    .optional()
    .describe("Treat pattern as literal string instead of regex (default: false)"),
  context: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe("Number of lines to show before and after each match (default: 0)"),
  limit: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(`Maximum number of matches to return (default: ${DEFAULT_GREP_LIMIT})`),
});

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

function compile(pattern: string, literal: boolean, ignoreCase: boolean): RegExp {
  try {
    return new RegExp(literal ? escapeRegExp(pattern) : pattern, ignoreCase ? "i" : "");
  } catch (error) {
    throw new ToolError(
      `Invalid regular expression ${JSON.stringify(pattern)}: ${error instanceof Error ? error.message : String(error)}. Use literal=true to search for the text as is.`,
    );
  }
}

/** The output lines for one file's matches, context windows merged so no line repeats. */
function formatFileMatches(
  shownPath: string,
  lines: string[],
  matchLines: number[],
  context: number,
): { output: string[]; longLines: boolean } {
  const output: string[] = [];
  let longLines = false;
  const isMatch = new Set(matchLines);
  let printedUpTo = 0;
  for (const line of matchLines) {
    const from = Math.max(printedUpTo + 1, line - context);
    const to = Math.min(lines.length, line + context);
    for (let current = from; current <= to; current++) {
      const { text, truncated } = truncateLine(lines[current - 1] ?? "");
      longLines ||= truncated;
      output.push(
        isMatch.has(current) ? `${shownPath}:${current}: ${text}` : `${shownPath}-${current}- ${text}`,
      );
    }
    printedUpTo = Math.max(printedUpTo, to);
  }
  return { output, longLines };
}

export const grepTool = defineTool({
  name: "grep",
  description: `Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects .gitignore; skips binary files. Output is truncated to ${DEFAULT_GREP_LIMIT} matches or ${MAX_OUTPUT_BYTES / 1024}KB (whichever is hit first). Long lines are truncated to ${MAX_GREP_LINE_CHARS} chars.`,
  parameters: GrepParameters,
  replay: TOOL_REPLAY_CLASSES.grep,
  async execute(args, { workspace, signal }) {
    const { pattern, glob, ignoreCase = false, literal = false, context = 0 } = args;
    const limit = args.limit ?? DEFAULT_GREP_LIMIT;
    const regex = compile(pattern, literal, ignoreCase);
    if (glob !== undefined) assertConfinedGlob(glob, "glob");
    const matchesGlob = glob ? picomatch(glob, { dot: true, basename: !glob.includes("/") }) : () => true;
    const output: string[] = [];
    let matchCount = 0;
    let longLines = false;
    /** Searches one open file, shown as `shownPath`; "stop" once the match limit is reached. */
    const search = async (shownPath: string, handle: FileHandle, stats: Stats) => {
      if (stats.size > MAX_EDIT_FILE_BYTES) return undefined;
      const data = await handle.readFile().catch(() => undefined);
      if (!data || looksBinary(data.subarray(0, 8192))) return undefined;
      const lines = data.toString("utf8").split(/\r?\n/);
      if (lines.at(-1) === "") lines.pop(); // the final newline ends the last line; it opens no new one
      const matchLines: number[] = [];
      for (let i = 0; i < lines.length && matchCount < limit; i++) {
        if (regex.test(lines[i] ?? "")) {
          matchLines.push(i + 1);
          matchCount++;
        }
      }
      const formatted = formatFileMatches(shownPath, lines, matchLines, context);
      output.push(...formatted.output);
      longLines ||= formatted.longLines;
      return matchCount >= limit ? ("stop" as const) : undefined;
    };
    const shown = args.path ?? ".";
    await withWorkspaceFs(workspace, async (ws) => {
      const target = await layerPath(ws, shown);
      try {
        await walk(
          ws,
          target,
          async (entry) => {
            if (entry.isDirectory || !matchesGlob(entry.relative)) return undefined;
            const opened = await entry.open().catch(() => undefined); // gone or no longer a file: skipped
            if (!opened) return undefined;
            try {
              return await search(entry.relative, opened.handle, opened.stats);
            } finally {
              await opened.handle.close();
            }
          },
          signal,
        );
        return;
      } catch (error) {
        if (errorCode(error) !== "ENOTDIR") explain(error, shown, { ENOENT: `Path not found: ${shown}` });
      }
      // Not a directory: a single file, shown by its name.
      const { handle, stats, relative } = await ws
        .openFile(target, { links: "inside" })
        .catch((error: unknown) =>
          explain(error, shown, { ENOENT: `Path not found: ${shown}`, ENOTDIR: `Path not found: ${shown}` }),
        );
      try {
        const name = posixPath.basename(relative);
        if (matchesGlob(name)) await search(name, handle, stats);
      } finally {
        await handle.close();
      }
    });
    if (matchCount === 0) return textOutput("No matches found");

    const { text, details } = listing(
      output,
      { matchCount },
      matchCount >= limit
        ? { notice: notices.matchLimit(limit), detail: "matchLimitReached", value: limit }
        : undefined,
      longLines ? [{ notice: notices.longLines(), detail: "linesTruncated", value: true }] : [],
    );
    return textOutput(text, details);
  },
});
