/** Session reads (`GET /v1/sessions/{id}`, `GET /v1/sessions`) and deletion (`DELETE /v1/sessions/{id}`). */

import type { z } from "@hono/zod-openapi";
import { createRoute } from "@hono/zod-openapi";
import type { LatestRun } from "../../run-client/session-runs";
import { ProblemError } from "../problems";
import type { RouteContext } from "../route-context";
import { createRouter } from "../router";
import {
  DeletedSessionSchema,
  ListQuerySchema,
  SessionListSchema,
  SessionParamsSchema,
  type SessionStatusSchema,
  SessionViewSchema,
} from "../schemas";
import { recordDeletion } from "../session-tombstones";
import { forgetSlackThread } from "../slack/threads";
import { newEventId, publishFromApi } from "../webhook-publishing";
import { liveState, problemResponses, refOf, requireSession } from "./common";

const getSession = createRoute({
  method: "get",
  path: "/v1/sessions/{sessionId}",
  summary: "A session: status, latest run, entry count and leaf",
  request: { params: SessionParamsSchema },
  responses: {
    200: { description: "The session", content: { "application/json": { schema: SessionViewSchema } } },
    ...problemResponses(),
  },
});

const listSessions = createRoute({
  method: "get",
  path: "/v1/sessions",
  summary: "The caller's sessions, in id order, paged, with when each was last written",
  request: { query: ListQuerySchema },
  responses: {
    200: {
      description: "A page of sessions",
      content: { "application/json": { schema: SessionListSchema } },
    },
    ...problemResponses(),
  },
});

const deleteSession = createRoute({
  method: "delete",
  path: "/v1/sessions/{sessionId}",
  summary:
    "Delete the session and everything stored for it (entries, workspace snapshots, run histories); every route then answers 404 for it; refused while a run is live",
  request: { params: SessionParamsSchema },
  responses: {
    200: {
      description: "Deleted",
      content: { "application/json": { schema: DeletedSessionSchema } },
    },
    ...problemResponses(409),
  },
});

export function sessionStatus(run: LatestRun | undefined): z.infer<typeof SessionStatusSchema> {
  const state = liveState(run);
  if (state?.status === "waiting_approval" || state?.status === "paused") return state.status;
  if (state?.status === "running" || state?.status === "starting") return "running";
  return "idle";
}

type RunView = NonNullable<z.infer<typeof SessionViewSchema>["run"]>;

/** A run as the API shows it: a workflow closed by failure reports that, whatever its state said. */
function runView({ runId, state, failure, result }: LatestRun): RunView {
  const view: RunView = {
    runId,
    status: failure?.status ?? state?.status ?? result?.status ?? "starting",
    // A closed workflow runs no tool any more, whatever it was waiting for.
    pendingToolCalls: failure ? [] : (state?.pendingToolCalls ?? []),
  };
  const error = failure?.error ?? state?.error;
  if (error) view.error = error;
  if (state) {
    view.turn = state.turn;
    view.usage = state.usage;
    view.cost = state.usage.cost.total;
    if (state.endReason !== undefined) view.endReason = state.endReason;
    if (state.pause && !failure) view.pause = state.pause;
    if (state.budget) view.budget = state.budget;
    if (state.previousRunId !== undefined) view.previousRunId = state.previousRunId;
  } else if (result) {
    view.turn = result.turns;
    view.usage = result.usage;
    view.cost = result.usage.cost.total;
    view.endReason = result.reason;
  }
  return view;
}

export function sessionRoutes(deps: RouteContext) {
  return createRouter()
    .openapi(getSession, async (c) => {
      const { sessionId } = c.req.valid("param");
      const ref = refOf(c, sessionId);
      const { header, run, maintenance } = await requireSession(deps, ref);
      const { entries } = header ? await deps.store.readEntries(ref, { untilGap: true }) : { entries: [] };
      const view: z.infer<typeof SessionViewSchema> = {
        sessionId,
        status: sessionStatus(run),
        entryCount: entries.length,
        leafId: entries.at(-1)?.entry.id ?? null,
      };
      if (header?.parentSession !== undefined) view.parentSession = header.parentSession;
      if (header) view.createdAt = header.timestamp;
      if (run) view.run = runView(run);
      if (view.run && view.status === "running") {
        // Best effort: the view answers without it when Temporal cannot describe the run now.
        const waiting = await (await deps.runs()).wait(ref).catch(() => undefined);
        if (waiting) view.run.waiting = waiting;
      }
      if (maintenance) view.maintenance = maintenance;
      return c.json(view, 200);
    })
    .openapi(deleteSession, async (c) => {
      const { sessionId } = c.req.valid("param");
      const ref = refOf(c, sessionId);
      const { run, maintenance } = await requireSession(deps, ref);
      if (sessionStatus(run) !== "idle" || maintenance?.status === "running") {
        throw new ProblemError(
          "run-busy",
          "The session has a live run; abort it or wait until it has ended.",
        );
      }
      // The tombstone first: from here on no route answers from what Temporal still holds.
      await recordDeletion(deps.objects, ref, { deletedAt: new Date(deps.now()).toISOString() });
      const { deletedObjects } = await deps.store.deleteSession(ref);
      await forgetSlackThread(deps.objects, ref);
      const runs = await deps.runs();
      await runs.deleteHistories(ref).catch((error: unknown) =>
        deps.log({
          level: "warn",
          msg: "run histories not deleted from Temporal (the tombstone keeps them unreadable)",
          path: c.req.path,
          error: String(error),
        }),
      );
      await publishFromApi(deps, ref.tenantId, {
        id: newEventId(),
        type: "session.deleted",
        timestamp: new Date(deps.now()).toISOString(),
        data: { sessionId },
      }).catch((error: unknown) =>
        deps.log({
          level: "warn",
          msg: "the session.deleted webhook event was not published",
          path: c.req.path,
          error: String(error),
        }),
      );
      return c.json({ sessionId, deletedObjects }, 200);
    })
    .openapi(listSessions, async (c) => {
      const { limit, cursor } = c.req.valid("query");
      const page = await deps.store.listSessions(c.get("tenantId"), { limit, cursor });
      const body: z.infer<typeof SessionListSchema> = {
        sessions: page.sessions.map(({ sessionId, header, lastActivityAt }) => ({
          sessionId,
          ...(header ? { createdAt: header.timestamp } : {}),
          ...(lastActivityAt ? { lastActivityAt } : {}),
          ...(header?.parentSession !== undefined ? { parentSession: header.parentSession } : {}),
        })),
      };
      if (page.nextCursor) body.nextCursor = page.nextCursor;
      return c.json(body, 200);
    });
}
