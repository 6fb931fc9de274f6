/** `GET /v1/sessions/{id}/diff`: what the session's tools changed in its workspace (store/workspace-patch.ts). */
import { createRoute, z } from "@hono/zod-openapi";
import { sessionWorkspacePatch } from "../../store/workspace-patch";
import type { RouteContext } from "../route-context";
import { createRouter } from "../router";
import { SessionParamsSchema } from "../schemas";
import { problemResponses, refOf, requireSession } from "./common";

const WorkspaceDiffSchema = z
  .object({
    sessionId: z.string(),
    baseEntryId: z.string().nullable().openapi({
      description:
        "The entry whose recorded workspace the diff starts from (the workspace the session's first tool call found); null: an empty folder",
    }),
    leafEntryId: z.string().nullable().openapi({
      description: "The entry whose recorded workspace the diff ends at; null: nothing recorded, no changes",
    }),
    files: z.array(
      z.object({
        path: z.string(),
        change: z.enum(["added", "modified", "deleted"]),
        type: z.enum(["file", "dir", "symlink"]),
        omitted: z.enum(["binary", "too-large", "too-complex"]).optional().openapi({
          description:
            "The patch names the file without its lines: a NUL byte (binary), over 1 MiB (too-large), a line diff past its time bound (too-complex)",
        }),
      }),
    ),
    patch: z.string().openapi({ description: "Unified diff of the changed files (a/ and b/ names)" }),
    truncated: z.boolean().openapi({ description: "The patch stopped at 200,000 characters" }),
  })
  .openapi("WorkspaceDiff");

const getDiff = createRoute({
  method: "get",
  path: "/v1/sessions/{sessionId}/diff",
  summary:
    "What the session's tools changed in its workspace: from the workspace its first tool call found to the one at its leaf",
  request: { params: SessionParamsSchema },
  responses: {
    200: { description: "The diff", content: { "application/json": { schema: WorkspaceDiffSchema } } },
    ...problemResponses(),
  },
});

export function diffRoutes(deps: RouteContext) {
  return createRouter().openapi(getDiff, async (c) => {
    const { sessionId } = c.req.valid("param");
    const ref = refOf(c, sessionId);
    const { header } = await requireSession(deps, ref);
    const diff = header
      ? await sessionWorkspacePatch(deps.store, deps.snapshots, ref)
      : { baseEntryId: null, leafEntryId: null, files: [], patch: "", truncated: false };
    return c.json({ sessionId, ...diff }, 200);
  });
}
