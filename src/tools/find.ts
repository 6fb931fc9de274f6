import picomatch from "picomatch";
import { z } from "zod";
import { TOOL_REPLAY_CLASSES } from "../core/tool-replay";
import { explain, layerPath, withWorkspaceFs } from "./tool-fs";
import { DEFAULT_FIND_LIMIT, listing, MAX_OUTPUT_BYTES, notices } from "./truncate";
import { defineTool, textOutput } from "./types";
import { assertConfinedGlob, walk } from "./walk";

const FindParameters = z.object({
  pattern: z
    .string()
    .min(1)
    .describe("Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'"),
  path: z.string().optional().describe("Directory to search in (default: the workspace root)"),
  limit: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(`Maximum number of results (default: ${DEFAULT_FIND_LIMIT})`),
});

/**
 * A pattern without "/" matches file names anywhere; with "/", it matches the path relative to
 * the search directory at any depth (as `fd --glob --full-path` with an implicit leading `**\/`).
 */
function matcherFor(pattern: string): (relative: string) => boolean {
  if (!pattern.includes("/")) return picomatch(pattern, { dot: true, basename: true });
  const anchored = pattern.startsWith("**/") || pattern === "**" ? pattern : `**/${pattern}`;
  return picomatch(anchored, { dot: true });
}

export const findTool = defineTool({
  name: "find",
  description: `Search for files by glob pattern. Returns matching paths relative to the search directory (directories end with /). Respects .gitignore. Output is truncated to ${DEFAULT_FIND_LIMIT} results or ${MAX_OUTPUT_BYTES / 1024}KB (whichever is hit first).`,
  parameters: FindParameters,
  replay: TOOL_REPLAY_CLASSES.find,
  async execute({ pattern, path, limit = DEFAULT_FIND_LIMIT }, { workspace, signal }) {
    assertConfinedGlob(pattern, "pattern");
    const matches = matcherFor(pattern);
    const results: string[] = [];
    let limitReached = false;
    const shown = path ?? ".";
    await withWorkspaceFs(workspace, async (ws) =>
      walk(
        ws,
        await layerPath(ws, shown),
        async (entry) => {
          if (!matches(entry.relative)) return undefined;
          if (results.length >= limit) {
            limitReached = true;
            return "stop";
          }
          results.push(entry.isDirectory ? `${entry.relative}/` : entry.relative);
          return undefined;
        },
        signal,
      ).catch((error: unknown) =>
        explain(error, shown, { ENOENT: `Path not found: ${shown}`, ENOTDIR: `Not a directory: ${shown}` }),
      ),
    );
    if (results.length === 0) return textOutput("No files found matching pattern");

    const { text, details } = listing(
      results,
      { count: results.length },
      limitReached
        ? { notice: notices.resultLimit(limit), detail: "resultLimitReached", value: limit }
        : undefined,
    );
    return textOutput(text, details);
  },
});
