import { constants } from "node:fs";
import * as fs from "node:fs/promises";
import * as path from "node:path";
import { z } from "zod";
import { defineTool, ToolError, textOutput } from "./types";
import { resolveInside } from "./workspace";

const WriteParameters = z.object({
  path: z
    .string()
    .describe("Path to the file to write (relative to the workspace root, or absolute inside it)"),
  content: z.string().describe("Content to write to the file"),
});

/**
 * Opens for writing without following a symlink in the last component (O_NOFOLLOW), so a link
 * swapped in after the path check cannot redirect the write.
 */
export async function writeFileNoFollow(real: string, data: string | Buffer): Promise<void> {
  const handle = await fs.open(
    real,
    constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
    0o666,
  );
  try {
    await handle.writeFile(data);
  } finally {
    await handle.close();
  }
}

async function currentContent(real: string, shownPath: string): Promise<Buffer | undefined> {
  try {
    return await fs.readFile(real);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    if (code === "EISDIR") throw new ToolError(`Cannot write: ${shownPath} is a directory.`);
    throw error;
  }
}

export const writeTool = defineTool({
  name: "write",
  description:
    "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.",
  parameters: WriteParameters,
  replay: "idempotent-with-check",
  async execute({ path: userPath, content }, { workspace, signal }) {
    const { real, relative } = await resolveInside(workspace, userPath);
    const data = Buffer.from(content, "utf8");
    const existing = await currentContent(real, userPath);
    if (existing?.equals(data)) {
      return textOutput(
        `${relative} already contains exactly this content (${data.length} bytes); already written.`,
        {
          bytes: data.length,
          alreadyWritten: true,
        },
      );
    }
    if (signal?.aborted) throw new ToolError("Operation aborted");
    await fs.mkdir(path.dirname(real), { recursive: true });
    await writeFileNoFollow(real, data);
    return textOutput(`Successfully wrote ${data.length} bytes to ${relative}`, {
      bytes: data.length,
      created: existing === undefined,
    });
  },
});
