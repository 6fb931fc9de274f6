/** Schedule routes: create, list, get, pause, resume, trigger and delete a tenant's scheduled runs. */
import { randomUUID } from "node:crypto";
import { createRoute } from "@hono/zod-openapi";
import type { Context } from "hono";
import { type OverlapPolicy, type UnattendedApproval, unattendedSettings } from "../../workflows/schedules";
import type { RouteContext } from "../route-context";
import type { ApiEnv } from "../router";
import { createRouter } from "../router";
import {
  ScheduleDeletedSchema,
  ScheduleListSchema,
  ScheduleNoteSchema,
  ScheduleParamsSchema,
  ScheduleSchema,
  scheduleBodySchema,
  scheduleTimingOf,
} from "../schedule-schemas";
import { TenantSchedules } from "../schedules";
import { AcceptedSchema, type MessageBodyOptions } from "../schemas";
import { idempotencyHeaderParam, problemResponses } from "./common";
import { messageBodyOptions, tenantRunRequest } from "./runs";

const json = <T>(schema: T) => ({ content: { "application/json": { schema } } });

const createSchedule = (options: MessageBodyOptions) =>
  createRoute({
    method: "post",
    path: "/v1/schedules",
    summary:
      "Create a schedule: a Temporal Schedule whose every firing starts a run (new session, or `sessionId`) with the prompt and run settings",
    request: { body: { required: true, ...json(scheduleBodySchema(options)) } },
    responses: {
      201: { description: "Created", ...json(ScheduleSchema) },
      ...problemResponses(403, 409, 413, 415, 422),
    },
    parameters: [idempotencyHeaderParam],
  });

const listSchedules = createRoute({
  method: "get",
  path: "/v1/schedules",
  summary: "The tenant's schedules (a schedule created a moment ago may take a second to be listed)",
  responses: { 200: { description: "Schedules", ...json(ScheduleListSchema) }, ...problemResponses() },
});

const getSchedule = createRoute({
  method: "get",
  path: "/v1/schedules/{scheduleId}",
  summary: "A schedule: its timing, policies, prompt, next firings, recent and running firings",
  request: { params: ScheduleParamsSchema },
  responses: { 200: { description: "The schedule", ...json(ScheduleSchema) }, ...problemResponses() },
});

const noteRoute = (action: "pause" | "resume", summary: string) =>
  createRoute({
    method: "post",
    path: `/v1/schedules/{scheduleId}/${action}`,
    summary,
    request: {
      params: ScheduleParamsSchema,
      body: { required: false, ...json(ScheduleNoteSchema) },
    },
    responses: {
      200: { description: "The schedule", ...json(ScheduleSchema) },
      ...problemResponses(409, 413, 415, 422),
    },
    parameters: [idempotencyHeaderParam],
  });

const pauseSchedule = noteRoute(
  "pause",
  "Pause a schedule: it does not fire until resumed (trigger still fires it)",
);
const resumeSchedule = noteRoute("resume", "Resume a paused schedule");

const triggerSchedule = createRoute({
  method: "post",
  path: "/v1/schedules/{scheduleId}/trigger",
  summary: "Fire the schedule now (under its overlap policy)",
  request: { params: ScheduleParamsSchema },
  responses: { 202: { description: "Fired", ...json(AcceptedSchema) }, ...problemResponses(409, 422) },
  parameters: [idempotencyHeaderParam],
});

const deleteSchedule = createRoute({
  method: "delete",
  path: "/v1/schedules/{scheduleId}",
  summary: "Delete a schedule: it fires no more (a firing's run already going goes on)",
  request: { params: ScheduleParamsSchema },
  responses: {
    200: { description: "Deleted", ...json(ScheduleDeletedSchema) },
    ...problemResponses(),
  },
});

export function scheduleRoutes(deps: RouteContext) {
  const schedulesOf = async (c: Context<ApiEnv>) => {
    const runs = await deps.runs();
    return new TenantSchedules(runs.client, runs.taskQueue, c.get("tenantId"));
  };
  const bodyOptions = messageBodyOptions(deps);
  return createRouter()
    .openapi(createSchedule(bodyOptions), async (c) => {
      // The tenant's settings when the schedule is made; its firings are admitted under the quotas
      // of their moment (docs/api.md, "Starts and deliveries").
      const { body, settings } = await tenantRunRequest(
        deps,
        c.get("tenantId"),
        c.req.valid("json"),
        bodyOptions,
        "schedule",
      );
      const onApproval = body.onApproval as UnattendedApproval;
      const timing = scheduleTimingOf(body);
      const schedules = await schedulesOf(c);
      const view = await schedules.create({
        scheduleId: body.scheduleId ?? `schedule-${randomUUID().slice(0, 8)}`,
        timing,
        text: body.text,
        ...(body.sessionId !== undefined ? { sessionId: body.sessionId } : {}),
        settings: unattendedSettings(settings, onApproval, body.policy?.approvalTimeoutMs !== undefined),
        overlap: body.overlap as OverlapPolicy,
        catchupWindow: body.catchupWindow,
        onApproval,
        paused: body.paused,
        ...(body.note !== undefined ? { note: body.note } : {}),
      });
      return c.json(view, 201);
    })
    .openapi(listSchedules, async (c) => {
      const schedules = await schedulesOf(c);
      return c.json({ schedules: await schedules.list() }, 200);
    })
    .openapi(getSchedule, async (c) => {
      const { scheduleId } = c.req.valid("param");
      return c.json(await (await schedulesOf(c)).get(scheduleId), 200);
    })
    .openapi(pauseSchedule, async (c) => {
      const { scheduleId } = c.req.valid("param");
      const { note } = c.req.valid("json");
      return c.json(await (await schedulesOf(c)).pause(scheduleId, note), 200);
    })
    .openapi(resumeSchedule, async (c) => {
      const { scheduleId } = c.req.valid("param");
      const { note } = c.req.valid("json");
      return c.json(await (await schedulesOf(c)).resume(scheduleId, note), 200);
    })
    .openapi(triggerSchedule, async (c) => {
      const { scheduleId } = c.req.valid("param");
      await (await schedulesOf(c)).trigger(scheduleId);
      return c.json({ accepted: true as const }, 202);
    })
    .openapi(deleteSchedule, async (c) => {
      const { scheduleId } = c.req.valid("param");
      await (await schedulesOf(c)).delete(scheduleId);
      return c.json({ scheduleId, deleted: true }, 200);
    });
}
