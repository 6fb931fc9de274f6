/**
 * `POST /v1/integrations/slack/events`: Slack's Events API. Verifies the request signature,
 * answers the URL verification challenge, and maps threads to sessions:
 * - an `app_mention` starts a run in the thread's session (or reaches the live one);
 * - a plain message in a thread that already has a session is delivered with `auto` (steers a
 *   busy run, starts a run when idle);
 * - a message that is exactly the stop word (default `stop`) aborts the thread's run;
 * - a message that is a budget reply (`resume`, `budget <usd>`, `budget <n> tokens`) changes the
 *   run's budget as the API's `/resume` and `/budget` do (budget-replies.ts).
 * Each Slack team maps to its tenant (the operator's KEEL_SLACK_TEAMS, see teams.ts, first; then
 * tenants' settings, tenants/slack-teams.ts); its runs get the tools and policy of that mapping
 * and the tenant's default limits (budgets). An event of an unmapped team is acknowledged (so
 * Slack does not retry it), logged, and starts nothing.
 * It answers 200 as soon as the message is delivered (Slack wants an answer within 3 s); the
 * run's answer is posted to the thread later, by the worker (see reply.ts).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { DEFAULT_RUN_SETTINGS, type RunLimits, type SessionRef } from "../../contracts/runs";
import { DeliveryRefusal } from "../../core/failure-types";
import { parseBudgetCommand } from "../../integrations/slack/budget-commands";
import { postSlackReply, type SlackReply } from "../../integrations/slack/reply";
import { isRefusal, type MessageOutcome, startOrDeliver } from "../../run-client/start-or-deliver";
import { modelRefusal } from "../../tenants/settings";
import type { SlackTeam } from "../../tenants/slack-team-tools";
import type { TenantSettings } from "../../tenants/types";
import type { SlackConfig } from "../config";
import { ProblemError } from "../problems";
import type { RouteContext } from "../route-context";
import type { ApiRouter } from "../router";
import { problemResponses } from "../routes/common";
import { requireEnvironment } from "../routes/runs";
import { RunLimitsSchema } from "../schemas/message-body";
import { startServices } from "../tenant-runs";
import { answerBudgetReply } from "./budget-replies";
import { SLACK_SIGNATURE_HEADER, SLACK_TIMESTAMP_HEADER, verifySlackSignature } from "./signature";
import {
  claimSlackEvent,
  readSlackThread,
  releaseSlackEvent,
  type SlackThread,
  saveSlackThread,
  slackDeliveryId,
  slackSessionId,
} from "./threads";

const SlackEventSchema = z
  .object({
    type: z.string(),
    text: z.string().optional(),
    user: z.string().optional(),
    bot_id: z.string().optional(),
    subtype: z.string().optional(),
    channel: z.string().optional(),
    ts: z.string().optional(),
    thread_ts: z.string().optional(),
    /** The author's team (and, in a channel shared between organisations, `user_team`). */
    team: z.string().optional(),
    user_team: z.string().optional(),
  })
  .passthrough();

const SlackPayloadSchema = z
  .object({
    type: z.string(),
    challenge: z.string().optional(),
    team_id: z.string().optional(),
    event_id: z.string().optional(),
    event: SlackEventSchema.optional(),
    authorizations: z.array(z.object({ user_id: z.string().optional() }).passthrough()).optional(),
  })
  .passthrough();
type SlackPayload = z.infer<typeof SlackPayloadSchema>;
type SlackEvent = z.infer<typeof SlackEventSchema>;

const slackEvents = createRoute({
  method: "post",
  path: "/v1/integrations/slack/events",
  summary: "Slack Events API endpoint (signed by Slack; no API key)",
  security: [],
  request: {
    body: { required: true, content: { "application/json": { schema: { type: "object" } } } },
  },
  responses: {
    200: {
      description: "Acknowledged (or the URL verification challenge)",
      content: {
        "application/json": {
          schema: z.object({ ok: z.boolean().optional(), challenge: z.string().optional() }),
        },
      },
    },
    ...problemResponses(413),
  },
});

/** `<@U123>` and `<@U123|name>` mentions. */
const MENTION = /<@[A-Z0-9]+(?:\|[^>]*)?>/g;

function stripMentions(text: string): string {
  return text.replace(MENTION, " ").replace(/\s+/g, " ").trim();
}

/** What to do with an event: deliver to a thread's session, or nothing. */
interface ThreadMessage {
  /** Slack's id of the event; the same on each of Slack's retries. */
  eventId: string;
  thread: SlackThread;
  text: string;
  /** A mention may open a thread; a plain message only reaches threads that have a session. */
  opensThread: boolean;
  /** The teams the author belongs to: the event's own team and any the event names. */
  authorTeams: string[];
}

function threadMessageOf(payload: SlackPayload, event: SlackEvent): ThreadMessage | undefined {
  const eventId = payload.event_id;
  if (event.bot_id || event.subtype || !payload.team_id || !event.channel || !event.ts || !eventId)
    return undefined;
  const text = event.text ?? "";
  const authorTeams = [...new Set([payload.team_id, event.team, event.user_team])].filter(
    (team): team is string => team !== undefined,
  );
  if (event.type === "app_mention") {
    const thread = { teamId: payload.team_id, channel: event.channel, threadTs: event.thread_ts ?? event.ts };
    return { eventId, thread, text: stripMentions(text), opensThread: true, authorTeams };
  }
  if (event.type === "message" && event.thread_ts) {
    // A message mentioning the app also arrives as app_mention; handle it once, there.
    const botUsers = (payload.authorizations ?? []).flatMap((a) => (a.user_id ? [a.user_id] : []));
    if (botUsers.some((user) => text.includes(`<@${user}`))) return undefined;
    const thread = { teamId: payload.team_id, channel: event.channel, threadTs: event.thread_ts };
    return { eventId, thread, text: stripMentions(text), opensThread: false, authorTeams };
  }
  return undefined;
}

async function handleThreadMessage(
  deps: RouteContext,
  slack: SlackConfig,
  team: SlackTeam,
  reply: SlackReply,
  message: ThreadMessage,
): Promise<void> {
  const ref: SessionRef = { tenantId: team.tenantId, sessionId: slackSessionId(message.thread) };
  if (!message.opensThread && !(await readSlackThread(deps.objects, ref))) return;
  if (message.text.length === 0) return;
  const runs = await deps.runs();
  if (message.text.toLowerCase() === slack.stopWord.toLowerCase()) {
    await runs.signalAbort(ref, "stopped from Slack");
    return;
  }
  const budget = parseBudgetCommand(message.text);
  if (budget) {
    await answerBudgetReply(deps, {
      ref,
      thread: message.thread,
      request: budget,
      authorTeams: message.authorTeams,
      tenantOfTeam: async (teamId) => (await slackTeamOf(deps, slack, teamId))?.tenantId,
      reply,
    });
    return;
  }
  const say = (text: string) =>
    reply({ channel: message.thread.channel, threadTs: message.thread.threadTs, text }).catch((failure) =>
      deps.log({ level: "warn", msg: "slack reply failed", error: String(failure) }),
    );
  const tenant = await tenantRunFields(deps, team.tenantId);
  if (tenant.refusal !== undefined) {
    await say(`The message was not delivered: ${tenant.refusal}`);
    return;
  }
  try {
    await requireEnvironment(deps, team.tenantId, { environment: tenant.environment });
  } catch (error) {
    if (!(error instanceof ProblemError)) throw error;
    await say(`The message was not delivered: ${error.message}`);
    return;
  }
  // The worker posts the run's final answer into the thread when the run ends (and each pause).
  const settings = {
    ...DEFAULT_RUN_SETTINGS,
    model: deps.config.defaultModel,
    limits: { ...DEFAULT_RUN_SETTINGS.limits, ...tenant.limits },
    tools: team.tools,
    policy: team.policy,
    ...(tenant.environment !== undefined ? { environment: tenant.environment } : {}),
    chatReply: { kind: "slack" as const, channel: message.thread.channel, threadTs: message.thread.threadTs },
  };
  const outcome = await startOrDeliver(startServices(deps, runs), {
    ref,
    request: { text: message.text, mode: "auto" },
    settings,
    quotas: tenant.settings.quotas,
    deliveryId: slackDeliveryId(team.tenantId, message.eventId),
    // Recorded once admitted, so a refused start leaves no thread that later messages would reach.
    beforeDelivery: () => saveSlackThread(deps.objects, ref, message.thread),
  });
  const refused = slackRefusalText(outcome);
  if (refused !== undefined) await say(refused);
}

/** What the thread is told of a message the start path refused; undefined when it was taken. */
export function slackRefusalText(outcome: MessageOutcome): string | undefined {
  if (!isRefusal(outcome)) return undefined;
  if (outcome.type === "refused" && outcome.refusal === DeliveryRefusal.queueFull)
    return "Too many messages are waiting for this run; try again when it has caught up.";
  return `The message was not delivered: ${outcome.message}`;
}

/**
 * The team an event's team id maps to: the operator's mapping (KEEL_SLACK_TEAMS) wins; then the
 * tenants' settings. A deployment serving one tenant serves no other tenant's team.
 */
async function slackTeamOf(
  deps: RouteContext,
  slack: SlackConfig,
  teamId: string,
): Promise<SlackTeam | undefined> {
  const team = Object.hasOwn(slack.teams, teamId)
    ? slack.teams[teamId]
    : await deps.tenants?.slackTeams.teamOf(teamId);
  const only = deps.config.singleTenant;
  return team && (only === undefined || team.tenantId === only) ? team : undefined;
}

/**
 * What the tenant's settings give a run its Slack thread starts: its default limits
 * (`defaults.limits`: turns, budgets, pause timeout; none when they do not pass the deployment's
 * rules) and environment (`defaults.environment`, where its tools run), or why its settings refuse
 * the deployment's default model (`models`), which Slack runs use.
 */
async function tenantRunFields(
  deps: RouteContext,
  tenantId: string,
): Promise<{ settings: TenantSettings; limits: Partial<RunLimits>; environment?: string; refusal?: string }> {
  const settings = (await deps.tenants?.store.getSettings(tenantId)) ?? {};
  const refusal = modelRefusal(settings, deps.config.defaultModel);
  if (refusal) return { settings, limits: {}, refusal: refusal.message };
  const parsed = RunLimitsSchema.safeParse(settings.defaults?.limits ?? {});
  const environment = settings.defaults?.environment;
  return {
    settings,
    limits: parsed.success ? parsed.data : {},
    ...(typeof environment === "string" ? { environment } : {}),
  };
}

export function registerSlackRoutes(app: ApiRouter, deps: RouteContext): void {
  app.openapi(slackEvents, async (c) => {
    const slack = deps.config.slack;
    if (!slack) throw new ProblemError("not-found", "The Slack integration is not configured.");
    const body = await c.req.text();
    const check = verifySlackSignature({
      signingSecret: slack.signingSecret,
      timestamp: c.req.header(SLACK_TIMESTAMP_HEADER),
      signature: c.req.header(SLACK_SIGNATURE_HEADER),
      body,
      nowMs: deps.now(),
    });
    if (!check.ok) throw new ProblemError("invalid-signature", check.reason);

    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch {
      throw new ProblemError("malformed-body", "The body is not JSON.");
    }
    const parsed = SlackPayloadSchema.safeParse(value);
    if (!parsed.success) throw new ProblemError("invalid-request", "Not a Slack event payload.");
    const payload = parsed.data;
    if (payload.type === "url_verification") return c.json({ challenge: payload.challenge ?? "" }, 200);

    const message =
      payload.type === "event_callback" && payload.event
        ? threadMessageOf(payload, payload.event)
        : undefined;
    if (!message) return c.json({ ok: true }, 200);
    const team = await slackTeamOf(deps, slack, message.thread.teamId);
    if (!team) {
      deps.log({
        level: "warn",
        msg: "slack event of an unmapped team ignored (map it in a tenant's settings or KEEL_SLACK_TEAMS to serve it)",
        teamId: message.thread.teamId,
      });
      return c.json({ ok: true }, 200);
    }
    if (!(await claimSlackEvent(deps.objects, team.tenantId, message.eventId)))
      return c.json({ ok: true }, 200);
    const reply =
      deps.slackReply ??
      ((target) => postSlackReply(target, { token: slack.botToken, apiUrl: slack.apiUrl }));
    try {
      await handleThreadMessage(deps, slack, team, reply, message);
    } catch (error) {
      await releaseSlackEvent(deps.objects, team.tenantId, message.eventId);
      throw error;
    }
    return c.json({ ok: true }, 200);
  });
}
