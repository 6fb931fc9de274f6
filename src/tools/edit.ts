import type { FileHandle } from "node:fs/promises";
import { createPatch } from "diff";
import { z } from "zod";
import { TOOL_REPLAY_CLASSES } from "../core/tool-replay";
import { countOccurrences, locate } from "./edit-match";
import { looksBinary, MAX_EDIT_FILE_BYTES } from "./files";
import { ToolError } from "./tool-error";
import { explain, layerPath, replaceContent, withWorkspaceFs } from "./tool-fs";
import { formatSize } from "./truncate";
import { defineTool, type ToolOutput, textOutput } from "./types";
import { assertWithinQuota } from "./workspace-quota";

const EditParameters = z.object({
  path: z
    .string()
    .describe("Path to the file to edit (relative to the workspace root, or absolute inside it)"),
  oldText: z
    .string()
    .describe("Exact text to find and replace (must match exactly and be unique in the file)"),
  newText: z.string().describe("New text to replace the old text with"),
});

const BOM = "\uFEFF";
const toLF = (text: string): string => text.replace(/\r\n/g, "\n").replace(/\r/g, "\n");

/** The file's dominant line ending, judged by its first line break. */
function lineEndingOf(text: string): "\r\n" | "\n" {
  const lf = text.indexOf("\n");
  return lf > 0 && text[lf - 1] === "\r" ? "\r\n" : "\n";
}

interface EditDetails {
  /** Unified diff of the change (LF line endings). */
  diff: string;
  /** First changed line in the new file (1-indexed). */
  firstChangedLine: number;
  /** The match needed the tolerant comparison (whitespace, quotes, dashes, Unicode forms). */
  tolerant: boolean;
}

/**
 * True when a previous identical edit already took effect: newText is present and every
 * remaining occurrence of oldText is accounted for by newText itself (when newText contains it).
 */
function alreadyApplied(content: string, oldText: string, newText: string): boolean {
  const newCount = countOccurrences(content, newText);
  if (newText.length === 0 || newCount === 0) return false;
  const oldInNew = countOccurrences(newText, oldText);
  return countOccurrences(content, oldText) === newCount * oldInNew;
}

export const editTool = defineTool({
  name: "edit",
  description:
    "Edit a file by replacing exact text. The oldText must match exactly (including whitespace) and be unique in the file; if no exact match exists, a match ignoring trailing whitespace, smart quotes, Unicode dashes and special spaces is tried. Use this for precise, surgical edits. Line endings and a UTF-8 BOM are preserved.",
  parameters: EditParameters,
  replay: TOOL_REPLAY_CLASSES.edit,
  async execute(args, { workspace, sandbox, signal }) {
    return withWorkspaceFs(workspace, async (ws) => {
      // Read and written through one descriptor: the file changed is the file that was read.
      const { handle, stats, relative } = await ws
        .openFile(await layerPath(ws, args.path), { links: "inside", writable: true })
        .catch((error: unknown) =>
          explain(error, args.path, {
            ENOENT: `File not found: ${args.path}`,
            ENOTDIR: `File not found: ${args.path}`,
            EISDIR: `Cannot edit ${args.path}: not a regular file.`,
          }),
        );
      try {
        if (stats.size > MAX_EDIT_FILE_BYTES) {
          throw new ToolError(
            `Cannot edit ${args.path}: ${formatSize(stats.size)} exceeds ${formatSize(MAX_EDIT_FILE_BYTES)}.`,
          );
        }
        const withinQuota = (growth: number) => assertWithinQuota(ws.dir, sandbox.limits, growth, args.path);
        return await editOpened(handle, relative, args, signal, withinQuota);
      } finally {
        await handle.close();
      }
    });
  },
});

/** Applies the edit to the regular file open (read-write) at `handle`, shown as `relative`. */
async function editOpened(
  handle: FileHandle,
  relative: string,
  { path, oldText, newText }: z.output<typeof EditParameters>,
  signal: AbortSignal | undefined,
  /** Refuses a change that grows the file by `growth` bytes past the workspace quota. */
  withinQuota: (growth: number) => Promise<void>,
): Promise<ToolOutput> {
  const raw = await handle.readFile();
  if (looksBinary(raw.subarray(0, 8192))) throw new ToolError(`Cannot edit ${path}: it is a binary file.`);

  const decoded = raw.toString("utf8");
  const bom = decoded.startsWith(BOM) ? BOM : "";
  const original = decoded.slice(bom.length);
  const ending = lineEndingOf(original);
  const content = toLF(original);
  const oldLF = toLF(oldText);
  const newLF = toLF(newText);
  if (oldLF.length === 0) throw new ToolError("oldText must not be empty.");
  if (oldLF === newLF) throw new ToolError("oldText and newText are identical; nothing to change.");

  if (alreadyApplied(content, oldLF, newLF)) {
    return textOutput(
      `The edit is already applied in ${relative} (newText is present, oldText is not); nothing changed.`,
      {
        alreadyApplied: true,
      },
    );
  }
  const match = locate(content, oldLF);
  if (match.kind === "none") {
    const tolerantNew = newLF.trim().length > 0 ? locate(content, newLF) : { kind: "none" as const };
    if (tolerantNew.kind === "unique") {
      return textOutput(
        `The edit is already applied in ${relative} (newText is present, oldText is not); nothing changed.`,
        {
          alreadyApplied: true,
        },
      );
    }
    throw new ToolError(
      `Could not find the text to replace in ${relative}. oldText must match the file exactly, including whitespace and newlines; read the file again to copy it.`,
    );
  }
  if (match.kind === "ambiguous") {
    throw new ToolError(
      `Found ${match.count} occurrences of oldText in ${relative} (lines ${match.lines.join(", ")}${match.count > match.lines.length ? ", …" : ""}). The text must be unique: include more surrounding lines to identify one occurrence.`,
    );
  }

  const updated = content.slice(0, match.start) + newLF + content.slice(match.end);
  if (signal?.aborted) throw new ToolError("Operation aborted");
  const restored = ending === "\r\n" ? updated.replace(/\n/g, "\r\n") : updated;
  const data = Buffer.from(bom + restored, "utf8");
  await withinQuota(data.length - raw.length);
  await replaceContent(handle, data);

  const details: EditDetails = {
    diff: createPatch(relative, content, updated, undefined, undefined, { context: 3 }),
    firstChangedLine: content.slice(0, match.start).split("\n").length,
    tolerant: match.tolerant,
  };
  const how = match.tolerant ? " (matched ignoring whitespace/quote/dash differences)" : "";
  return textOutput(`Successfully replaced text in ${relative}${how}.`, details);
}
