/**
 * Routes on a session's entry tree: its entries (paged), fork at an entry, and the maintenance
 * tasks that append to an idle session (label, branch, compact).
 */
import { createRoute, type z } from "@hono/zod-openapi";
import { DEFAULT_RUN_SETTINGS, type SessionRef } from "../../contracts/runs";
import { SessionBusyError } from "../../run-client/maintenance";
import type { RunClient } from "../../run-client/run-client";
import { ProblemError } from "../problems";
import type { RouteContext } from "../route-context";
import { createRouter } from "../router";
import {
  BranchBodySchema,
  BranchResultSchema,
  CompactBodySchema,
  CompactResultSchema,
  CreatedSessionSchema,
  DEFAULT_PAGE_LIMIT,
  EntriesPageSchema,
  EntriesQuerySchema,
  ForkBodySchema,
  LabelBodySchema,
  LabelResultSchema,
  SessionParamsSchema,
} from "../schemas";
import { idempotencyHeaderParam, problemResponses, refOf, requireSession } from "./common";
import { forkAt, pathOrRefuse, sessionIndexOf } from "./new-session";

const getEntries = createRoute({
  method: "get",
  path: "/v1/sessions/{sessionId}/entries",
  summary: "Stored entries in sequence order, paged (only the contiguous prefix while a run writes)",
  request: { params: SessionParamsSchema, query: EntriesQuerySchema },
  responses: {
    200: { description: "A page of entries", content: { "application/json": { schema: EntriesPageSchema } } },
    ...problemResponses(),
  },
});

const forkSession = createRoute({
  method: "post",
  path: "/v1/sessions/{sessionId}/fork",
  summary: "A new session holding the path from the root to `entryId`",
  request: {
    params: SessionParamsSchema,
    body: { required: true, content: { "application/json": { schema: ForkBodySchema } } },
  },
  responses: {
    201: { description: "Forked", content: { "application/json": { schema: CreatedSessionSchema } } },
    ...problemResponses(413, 415, 422),
  },
  parameters: [idempotencyHeaderParam],
});

const branchSession = createRoute({
  method: "post",
  path: "/v1/sessions/{sessionId}/branch",
  summary: "Move the session's leaf to `entryId`, optionally summarizing the abandoned branch",
  request: {
    params: SessionParamsSchema,
    body: { required: true, content: { "application/json": { schema: BranchBodySchema } } },
  },
  responses: {
    200: { description: "The leaf moved", content: { "application/json": { schema: BranchResultSchema } } },
    ...problemResponses(409, 413, 415, 422),
  },
  parameters: [idempotencyHeaderParam],
});

const labelEntry = createRoute({
  method: "post",
  path: "/v1/sessions/{sessionId}/labels",
  summary: "Set the label of an entry (omit `label` to clear it): a label entry appended to an idle session",
  request: {
    params: SessionParamsSchema,
    body: { required: true, content: { "application/json": { schema: LabelBodySchema } } },
  },
  responses: {
    201: { description: "Labelled", content: { "application/json": { schema: LabelResultSchema } } },
    ...problemResponses(409, 413, 415, 422),
  },
  parameters: [idempotencyHeaderParam],
});

const compactSession = createRoute({
  method: "post",
  path: "/v1/sessions/{sessionId}/compact",
  summary: "Compact the session's context now",
  request: {
    params: SessionParamsSchema,
    body: { required: false, content: { "application/json": { schema: CompactBodySchema } } },
  },
  responses: {
    200: {
      description: "Compacted, or why not",
      content: { "application/json": { schema: CompactResultSchema } },
    },
    ...problemResponses(409, 413, 415, 422),
  },
  parameters: [idempotencyHeaderParam],
});

export function treeRoutes(deps: RouteContext) {
  /** The session's entries and the path root → `entryId` (entry-not-found when absent). */
  const pathTo = async (ref: SessionRef, entryId: string) =>
    pathOrRefuse(await sessionIndexOf(deps, ref), entryId);

  /** Runs a maintenance task; a live run on the session makes it a 409. */
  async function exclusive<T>(work: (runs: RunClient) => Promise<T>): Promise<T> {
    try {
      return await work(await deps.runs());
    } catch (error) {
      if (error instanceof SessionBusyError) {
        throw new ProblemError("run-busy", "The session has a live run; try again once it has ended.");
      }
      throw error;
    }
  }

  return (
    createRouter()
      .openapi(getEntries, async (c) => {
        const { sessionId } = c.req.valid("param");
        const { after, limit = DEFAULT_PAGE_LIMIT } = c.req.valid("query");
        const ref = refOf(c, sessionId);
        const { header } = await requireSession(deps, ref);
        const { entries } = header ? await deps.store.readEntries(ref, { untilGap: true }) : { entries: [] };
        const following = after === undefined ? entries : entries.filter((stored) => stored.seq > after);
        const page = following.slice(0, limit);
        const body: z.infer<typeof EntriesPageSchema> = { entries: page };
        if (following.length > page.length) body.nextAfter = page.at(-1)?.seq;
        return c.json(body, 200);
      })
      .openapi(forkSession, async (c) => {
        const { sessionId } = c.req.valid("param");
        const { entryId } = c.req.valid("json");
        const ref = refOf(c, sessionId);
        const { header } = await requireSession(deps, ref);
        const created = await forkAt(deps, ref, header, await pathTo(ref, entryId));
        return c.json(created, 201);
      })
      .openapi(labelEntry, async (c) => {
        const { sessionId } = c.req.valid("param");
        const { entryId, label } = c.req.valid("json");
        const ref = refOf(c, sessionId);
        await requireSession(deps, ref);
        await pathTo(ref, entryId);
        const result = await exclusive(async (runs) =>
          runs.label(ref, { targetId: entryId, ...(label !== undefined ? { label } : {}) }),
        );
        return c.json(
          {
            sessionId,
            entryId: result.entryId,
            targetId: entryId,
            ...(label !== undefined ? { label } : {}),
          },
          201,
        );
      })
      // Labels, branch and compact run as short workflows under the session's run id: while a run
      // is live they are refused (409), so they never race it.
      .openapi(branchSession, async (c) => {
        const { sessionId } = c.req.valid("param");
        const { entryId, summarize } = c.req.valid("json");
        const ref = refOf(c, sessionId);
        await requireSession(deps, ref);
        await pathTo(ref, entryId);
        const result = await exclusive(async (runs) =>
          runs.branch(ref, { entryId, summarize, model: deps.config.defaultModel }),
        );
        return c.json({ sessionId, leafId: result.leafId, summarized: result.summarized }, 200);
      })
      .openapi(compactSession, async (c) => {
        const { sessionId } = c.req.valid("param");
        const { instructions } = c.req.valid("json");
        const ref = refOf(c, sessionId);
        await requireSession(deps, ref);
        const { reserveTokens, keepRecentTokens } = DEFAULT_RUN_SETTINGS.compaction;
        const result = await exclusive(async (runs) =>
          runs.compact(ref, {
            model: deps.config.defaultModel,
            instructions,
            reserveTokens,
            keepRecentTokens,
          }),
        );
        return c.json({ sessionId, ...result }, 200);
      })
  );
}
