import { z } from "zod";
import { TOOL_REPLAY_CLASSES } from "../core/tool-replay";
import { explain, layerPath, withWorkspaceFs } from "./tool-fs";
import { DEFAULT_LS_LIMIT, EMPTY_DIRECTORY_LISTING, listing, MAX_OUTPUT_BYTES, notices } from "./truncate";
import { defineTool, textOutput } from "./types";
import { readDirAt } from "./workspace-fs";

const LsParameters = z.object({
  path: z.string().optional().describe("Directory to list (default: the workspace root)"),
  limit: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(`Maximum number of entries to return (default: ${DEFAULT_LS_LIMIT})`),
});

export const lsTool = defineTool({
  name: "ls",
  description: `List directory contents, sorted alphabetically, including dotfiles. Directories end with /, symbolic links with @. Output is truncated to ${DEFAULT_LS_LIMIT} entries or ${MAX_OUTPUT_BYTES / 1024}KB (whichever is hit first).`,
  parameters: LsParameters,
  replay: TOOL_REPLAY_CLASSES.ls,
  async execute({ path = ".", limit = DEFAULT_LS_LIMIT }, { workspace }) {
    // The directory is listed through its own descriptor; its entries are named, never followed.
    const entries = await withWorkspaceFs(workspace, async (ws) =>
      ws
        .withDir(await layerPath(ws, path), { links: "inside" }, (dirFd) => readDirAt(dirFd))
        .catch((error: unknown) =>
          explain(error, path, { ENOENT: `Path not found: ${path}`, ENOTDIR: `Not a directory: ${path}` }),
        ),
    );
    entries.sort((a, b) => a.name.toLowerCase().localeCompare(b.name.toLowerCase()));
    const shown = entries
      .slice(0, limit)
      .map((entry) => entry.name + (entry.isDirectory() ? "/" : entry.isSymbolicLink() ? "@" : ""));
    if (shown.length === 0) return textOutput(EMPTY_DIRECTORY_LISTING);

    const { text, details } = listing(
      shown,
      { count: shown.length },
      entries.length > limit
        ? { notice: notices.entryLimit(limit), detail: "entryLimitReached", value: limit }
        : undefined,
    );
    return textOutput(text, details);
  },
});
