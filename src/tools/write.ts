import { z } from "zod";
import { TOOL_REPLAY_CLASSES } from "../core/tool-replay";
import { ToolError } from "./tool-error";
import { explain, layerPath, replaceContent, withWorkspaceFs } from "./tool-fs";
import { defineTool, textOutput } from "./types";
import { assertWithinQuota } from "./workspace-quota";

const WriteParameters = z.object({
  path: z
    .string()
    .describe("Path to the file to write (relative to the workspace root, or absolute inside it)"),
  content: z.string().describe("Content to write to the file"),
});

export const writeTool = defineTool({
  name: "write",
  description:
    "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.",
  parameters: WriteParameters,
  replay: TOOL_REPLAY_CLASSES.write,
  async execute({ path: userPath, content }, { workspace, sandbox, signal }) {
    const data = Buffer.from(content, "utf8");
    if (signal?.aborted) throw new ToolError("Operation aborted");
    return withWorkspaceFs(workspace, async (ws) => {
      // One descriptor for the check and the write: the file compared is the file written.
      const { handle, relative, created } = await ws
        .openForWrite(await layerPath(ws, userPath), { links: "inside", readable: true, mode: 0o666 })
        .catch((error: unknown) =>
          explain(error, userPath, {
            EISDIR: `Cannot write: ${userPath} is a directory.`,
            ENOTDIR: `Cannot write ${userPath}: a parent is not a directory.`,
          }),
        );
      try {
        const before = created ? 0 : (await handle.stat()).size;
        if (!created && before === data.length && (await handle.readFile()).equals(data)) {
          return textOutput(
            `${relative} already contains exactly this content (${data.length} bytes); already written.`,
            { bytes: data.length, alreadyWritten: true },
          );
        }
        await assertWithinQuota(ws.dir, sandbox.limits, data.length - before, userPath).catch(
          async (error: unknown) => {
            // Refused: a file this call created stays absent.
            if (created) await ws.remove(relative).catch(() => undefined);
            throw error;
          },
        );
        await replaceContent(handle, data);
      } finally {
        await handle.close();
      }
      return textOutput(`Successfully wrote ${data.length} bytes to ${relative}`, {
        bytes: data.length,
        created,
      });
    });
  },
});
