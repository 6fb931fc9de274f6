import type { FileHandle } from "node:fs/promises";
import { createInterface } from "node:readline";
import { z } from "zod";
import { TOOL_REPLAY_CLASSES } from "../core/tool-replay";
import { looksBinary, MAX_IMAGE_BYTES, SNIFF_BYTES, sniffImageMimeType } from "./files";
import { ToolError } from "./tool-error";
import { explain, layerPath, withWorkspaceFs } from "./tool-fs";
import { formatSize, MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES, notices, truncateHead } from "./truncate";
import { defineTool, type ToolOutput, textOutput } from "./types";

const ReadParameters = z.object({
  path: z
    .string()
    .describe("Path to the file to read (relative to the workspace root, or absolute inside it)"),
  offset: z.number().int().min(1).optional().describe("Line number to start reading from (1-indexed)"),
  limit: z.number().int().min(1).optional().describe("Maximum number of lines to read"),
});

/** The first bytes of an open file, read at offset 0 (the handle's position does not move). */
async function readHead(handle: FileHandle): Promise<Buffer> {
  const buffer = Buffer.alloc(SNIFF_BYTES);
  const { bytesRead } = await handle.read(buffer, 0, SNIFF_BYTES, 0);
  return buffer.subarray(0, bytesRead);
}

interface LineWindow {
  totalLines: number;
  /** The first lines from `start`, at most `limit`, kept only until they exceed the output limits. */
  kept: string[];
}

/**
 * Streams the file once: counts all lines and keeps the requested window, but never more than
 * one line past the output limits (truncation needs only a prefix), so memory stays bounded.
 */
async function readLineWindow(
  handle: FileHandle,
  start: number,
  limit: number,
  signal?: AbortSignal,
): Promise<LineWindow> {
  const stream = handle.createReadStream({ encoding: "utf8", start: 0, autoClose: false });
  const lines = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
  const kept: string[] = [];
  let keptBytes = 0;
  let totalLines = 0;
  try {
    for await (const line of lines) {
      if (signal?.aborted) throw new ToolError("Operation aborted");
      totalLines++;
      const inWindow = totalLines >= start && totalLines < start + limit;
      const withinCaps = kept.length <= MAX_OUTPUT_LINES && keptBytes <= MAX_OUTPUT_BYTES;
      if (inWindow && withinCaps) {
        kept.push(line);
        keptBytes += Buffer.byteLength(line, "utf8") + 1;
      }
    }
  } finally {
    lines.close();
    stream.destroy();
  }
  return { totalLines, kept };
}

export const readTool = defineTool({
  name: "read",
  description: `Read the contents of a file. Supports text files and images (jpg, png, gif, webp); images are returned as attachments (up to ${formatSize(MAX_IMAGE_BYTES)}). Binary files are refused. For text files, output is truncated to ${MAX_OUTPUT_LINES} lines or ${MAX_OUTPUT_BYTES / 1024}KB (whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset until complete.`,
  parameters: ReadParameters,
  replay: TOOL_REPLAY_CLASSES.read,
  async execute({ path, offset, limit }, { workspace, signal }) {
    return withWorkspaceFs(workspace, async (ws) => {
      const { handle, stats } = await ws
        .openFile(await layerPath(ws, path), { links: "inside" })
        .catch((error: unknown) =>
          explain(error, path, {
            ENOENT: `File not found: ${path}`,
            ENOTDIR: `File not found: ${path}`,
            EISDIR: `${path} is a directory. Use ls to list it.`,
          }),
        );
      try {
        return await readOpened(handle, stats.size, { path, offset, limit }, signal);
      } finally {
        await handle.close();
      }
    });
  },
});

/** The read tool's result for the regular file open at `handle` (`size` from its fstat). */
async function readOpened(
  handle: FileHandle,
  size: number,
  { path, offset, limit }: z.output<typeof ReadParameters>,
  signal: AbortSignal | undefined,
): Promise<ToolOutput> {
  const head = await readHead(handle);
  const mimeType = sniffImageMimeType(head);
  if (mimeType) {
    if (size > MAX_IMAGE_BYTES) {
      throw new ToolError(
        `Image ${path} is ${formatSize(size)}, over the ${formatSize(MAX_IMAGE_BYTES)} limit for inline images. Use bash to shrink it first if an image tool is available.`,
      );
    }
    const data = (await handle.readFile()).toString("base64");
    return {
      content: [
        { type: "text", text: `Read image file [${mimeType}]` },
        { type: "image", data, mimeType },
      ],
      details: { mimeType, bytes: size },
      isError: false,
    };
  }
  if (looksBinary(head)) {
    throw new ToolError(
      `${path} is a binary file (${formatSize(size)}); read only shows text. Use bash (e.g. file, xxd | head) to inspect it.`,
    );
  }

  const start = offset ?? 1;
  const { totalLines, kept } = await readLineWindow(handle, start, limit ?? Number.POSITIVE_INFINITY, signal);
  if (totalLines === 0 && start === 1) return textOutput("[File is empty]", { totalLines });
  if (start > totalLines) {
    throw new ToolError(`Offset ${start} is beyond end of file (${totalLines} lines total)`);
  }
  const windowEnd = Math.min(totalLines, start + (limit ?? totalLines) - 1);
  const truncation = truncateHead(kept.join("\n"));
  if (truncation.firstLineExceedsLimit) {
    const lineBytes = Buffer.byteLength(kept[0] ?? "", "utf8");
    return textOutput(notices.readLongLine(start, lineBytes, path), { totalLines, truncation });
  }
  if (truncation.truncated || kept.length < windowEnd - start + 1) {
    const last = start + truncation.outputLines - 1;
    const notice =
      truncation.truncatedBy === "bytes"
        ? notices.readBytes(start, last, totalLines)
        : notices.readLines(start, last, totalLines);
    return textOutput(`${truncation.content}\n\n${notice}`, { totalLines, truncation });
  }
  if (windowEnd < totalLines) {
    return textOutput(
      `${truncation.content}\n\n${notices.readRemaining(totalLines - windowEnd, windowEnd + 1)}`,
      {
        totalLines,
      },
    );
  }
  return textOutput(truncation.content, { totalLines });
}
