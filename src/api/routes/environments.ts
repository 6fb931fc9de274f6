// Over 400 lines: the environment routes share one path space and two kinds of credential (API key, runner token); their declarations, scoping and handlers read best together.
/**
 * Environments (where a session's tools run) and their runners' routes. A tenant's API key
 * manages environments and runner tokens; a runner token (one tenant, one environment) claims
 * that environment's calls, heartbeats them and posts their results — nothing else. Docs:
 * docs/api.md, "Environments"; design: docs/architecture.md, "Environments".
 */
import { createRoute, z } from "@hono/zod-openapi";
import { WorkflowStreamClient } from "@temporalio/workflow-streams/client";
import type { Context } from "hono";
import { runWorkflowId } from "../../contracts/runs";
import { runnerTaskQueue } from "../../contracts/task-queues";
import { type LiveEvent, RUN_STREAM_TOPIC } from "../../core/events";
import { ToolResultBlockSchema } from "../../core/messages";
import {
  ClaimedHere,
  claimCall,
  completeCall,
  heartbeatCall,
  type RunnerCallDeps,
} from "../../environments/calls";
import {
  ENVIRONMENT_KINDS,
  ENVIRONMENT_NAME,
  type EnvironmentStore,
  isEnvironmentName,
  RUNNER_CALL_ID,
} from "../../environments/store";
import type { RunClient } from "../../run-client/run-client";
import { SessionNotFoundError } from "../../store/session-errors";
import type { SessionRef } from "../../store/session-keys";
import type { SessionStore } from "../../store/session-store";
import type { WorkspaceSnapshots } from "../../store/workspace-snapshots";
import { bearerAuth, singleTenantOnly } from "../auth";
import { ProblemError } from "../problems";
import type { RouteContext } from "../route-context";
import type { ApiEnv, ApiRouter } from "../router";
import { createRouter } from "../router";
import { runnerAuth, unauthorized } from "../runner-auth";
import { SessionIdSchema } from "../schemas/params";
import { leafWorkspaceArchive } from "../session-archive";
import { problemResponses } from "./common";

/** Longest `partial` a heartbeat carries (the tail runners send is at most 2 000 characters). */
const PARTIAL_MAX_CHARS = 4_000;
/** Longest a claim waits for a call (API Gateway ends a request after 29 s). */
const MAX_CLAIM_WAIT_SECONDS = 20;

const NameParams = z.object({
  name: z
    .string()
    // The pattern is in the document; `worker` (the built-in kind's name) is refused besides.
    .regex(ENVIRONMENT_NAME)
    .refine(isEnvironmentName, { error: "an environment name: [A-Za-z0-9][A-Za-z0-9_-]{0,62}, not `worker`" })
    .openapi({ param: { name: "name", in: "path" }, example: "laptop" }),
});
const CallParams = NameParams.extend({
  callId: z
    .string()
    .regex(RUNNER_CALL_ID)
    .openapi({ param: { name: "callId", in: "path" } }),
});
const WorkspaceParams = NameParams.extend({ sessionId: SessionIdSchema });
const GZIP = "application/gzip";
const TokenParams = NameParams.extend({
  tokenId: z
    .string()
    .regex(/^[0-9a-f]{12}$/)
    .openapi({ param: { name: "tokenId", in: "path" } }),
});

const EnvironmentView = z
  .object({
    name: z.string(),
    kind: z.enum(ENVIRONMENT_KINDS),
    createdAt: z.string(),
    description: z.string().optional(),
  })
  .openapi("Environment");
const CreateEnvironmentBody = z
  .object({
    name: NameParams.shape.name,
    kind: z.enum(ENVIRONMENT_KINDS).default("runner"),
    description: z.string().max(500).optional(),
  })
  .openapi("EnvironmentRequest");
const TokenView = z.object({ tokenId: z.string(), createdAt: z.string() });
// Its own object, not `EnvironmentView.extend` (an `allOf` in the document): the conformance test
// reads every object as closed, which an `allOf` of two objects cannot be.
const EnvironmentDetail = z
  .object({ ...EnvironmentView.shape, tokens: z.array(TokenView), waitingCalls: z.number().int() })
  .openapi("EnvironmentDetail");
const IssuedToken = z
  .object({
    tokenId: z.string(),
    token: z
      .string()
      .openapi({ description: "The runner token; shown once, stored only as its sha256 digest" }),
  })
  .openapi("RunnerToken");
const ClaimBody = z.object({
  waitSeconds: z.number().int().min(0).max(MAX_CLAIM_WAIT_SECONDS).default(MAX_CLAIM_WAIT_SECONDS),
  runs: z
    .array(z.enum(["mcp", "secrets"]))
    .max(8)
    .optional()
    .openapi({
      description:
        "What this runner runs beyond the built-in tools: `mcp`, MCP listings and calls (required: every runner of an environment takes its MCP calls too; a runner of an earlier release that does not say so is refused, 400); `secrets`, calls with the run's tenant secrets (a call naming secrets claimed by a runner that does not say so gets an error result: it would run without them)",
    }),
});
const McpServerView = z.record(z.string(), z.unknown()).openapi({
  description:
    "An MCP server as the run names it (`mcpServers` of the message body); `{secret: NAME}` names one of the tenant's secrets, sent with the call (`secrets`)",
});
const ClaimedCallView = z
  .object({
    callId: z.string(),
    claimId: z.string().openapi({ description: "Proves the claim in this call's heartbeats and result" }),
    attempt: z.number().int(),
    sessionId: z.string(),
    kind: z.enum(["tool", "mcp-list"]).openapi({
      description:
        "`tool`: run `toolCall` (on `mcp`'s server when set); `mcp-list`: list the tools of `servers`",
    }),
    toolCall: z
      .object({ id: z.string(), name: z.string(), arguments: z.record(z.string(), z.unknown()) })
      .optional(),
    mcp: z
      .object({
        server: McpServerView,
        tool: z.string(),
        replay: z.enum(["safe", "idempotent-with-check", "unsafe"]),
      })
      .optional()
      .openapi({ description: "An MCP tool: the server to call it on, and its name there" }),
    servers: z
      .array(McpServerView)
      .optional()
      .openapi({ description: "The MCP servers to list (kind `mcp-list`)" }),
    network: z.unknown().optional(),
    secrets: z
      .array(
        z.object({
          name: z.string(),
          hosts: z.array(z.string()),
          in: z.array(z.enum(["header", "basic-auth"])),
          value: z.string(),
        }),
      )
      .optional()
      .openapi({
        description:
          "A call that starts processes in a run naming tenant secrets: each secret with its value, for this call only (the runner's sandbox sees placeholders, its egress proxy injects the values toward the bound hosts; dropped after the call)",
      }),
    missingSecrets: z.array(z.string()).optional().openapi({
      description: "Names the run gives that the tenant no longer has (their placeholders carry nothing)",
    }),
    forkOf: z.string().optional().openapi({
      description:
        "The session this call's session was started from (a sub-agent's parent): a runner meeting the session first starts its workspace from that one's",
    }),
  })
  .openapi("RunnerCall");
const HeartbeatBody = z.object({
  claimId: z.string().min(1).max(64),
  partial: z
    .string()
    .max(PARTIAL_MAX_CHARS)
    .optional()
    .openapi({ description: "The tool's output so far (its tail), published to the run's stream" }),
});
const HeartbeatAnswer = z.object({
  cancel: z
    .boolean()
    .openapi({ description: "Stop the call (the run aborted it) and post what it produced" }),
});
const McpToolView = z.object({
  tool: z.string().min(1).max(128),
  description: z.string().max(2_000),
  inputSchema: z.record(z.string(), z.unknown()),
  replay: z.enum(["safe", "idempotent-with-check", "unsafe"]),
});
const McpListingView = z.union([
  z.object({ server: z.string(), status: z.literal("ready"), tools: z.array(McpToolView).max(1_000) }),
  z.object({ server: z.string(), status: z.literal("unavailable"), error: z.string().max(4_000) }),
]);
const ResultBody = z
  .object({
    claimId: z.string().min(1).max(64),
    output: z
      .object({
        content: z.array(ToolResultBlockSchema).max(100),
        details: z.unknown().optional(),
        isError: z.boolean(),
      })
      .optional()
      .openapi({ description: "A tool call's output (kind `tool`)" }),
    mcpToolsChanged: z
      .array(z.string().max(64))
      .max(20)
      .optional()
      .openapi({ description: "After an MCP call: its server announced a changed tool list" }),
    mcpTools: z.array(McpListingView).max(20).optional().openapi({
      description: "A listing's answer (kind `mcp-list`): each server's tools, or why it is unavailable",
    }),
  })
  .openapi("RunnerResult");

const json = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

const createEnvironment = createRoute({
  method: "post",
  path: "/v1/environments",
  summary: "Create an environment (kind `runner`: a `keel runner` somewhere runs its sessions' tools)",
  request: { body: { content: { "application/json": { schema: CreateEnvironmentBody } }, required: true } },
  responses: { 201: json(EnvironmentView, "Created"), ...problemResponses(409) },
});
const listEnvironments = createRoute({
  method: "get",
  path: "/v1/environments",
  summary: "The caller's environments",
  responses: {
    200: json(z.object({ environments: z.array(EnvironmentView) }), "Environments"),
    ...problemResponses(),
  },
});
const getEnvironment = createRoute({
  method: "get",
  path: "/v1/environments/{name}",
  summary: "An environment and its runner tokens (ids only)",
  request: { params: NameParams },
  responses: {
    200: json(EnvironmentDetail, "The environment"),
    ...problemResponses(),
  },
});
const deleteEnvironment = createRoute({
  method: "delete",
  path: "/v1/environments/{name}",
  summary: "Delete an environment, revoking its tokens",
  request: { params: NameParams },
  responses: { 204: { description: "Deleted" }, ...problemResponses() },
});
const issueToken = createRoute({
  method: "post",
  path: "/v1/environments/{name}/tokens",
  summary: "A new runner token for the environment (shown once)",
  request: { params: NameParams },
  responses: { 201: json(IssuedToken, "The token"), ...problemResponses() },
});
const revokeToken = createRoute({
  method: "delete",
  path: "/v1/environments/{name}/tokens/{tokenId}",
  summary: "Revoke a runner token: refused (401) from the next request on",
  request: { params: TokenParams },
  responses: { 204: { description: "Revoked" }, ...problemResponses() },
});
const claim = createRoute({
  method: "post",
  path: "/v1/environments/{name}/calls:claim",
  summary: "Runner token only: take the oldest waiting tool call of the environment (long poll)",
  request: {
    params: NameParams,
    body: { content: { "application/json": { schema: ClaimBody } }, required: false },
  },
  responses: {
    200: json(ClaimedCallView, "A call, now held by this runner"),
    204: { description: "No call came within the wait" },
    ...problemResponses(429),
  },
});
const heartbeat = createRoute({
  method: "post",
  path: "/v1/environments/{name}/calls/{callId}/heartbeat",
  summary: "Runner token only: the call is still running (relayed to its activity)",
  request: {
    params: CallParams,
    body: { content: { "application/json": { schema: HeartbeatBody } }, required: true },
  },
  responses: { 200: json(HeartbeatAnswer, "Go on, or stop"), ...problemResponses() },
});
const postResult = createRoute({
  method: "post",
  path: "/v1/environments/{name}/calls/{callId}/result",
  summary: "Runner token only: the call's output; stored as its result and the run goes on",
  request: {
    params: CallParams,
    body: { content: { "application/json": { schema: ResultBody } }, required: true },
  },
  responses: { 200: json(z.object({ stored: z.literal(true) }), "Stored"), ...problemResponses() },
});

const WORKSPACE = "/v1/environments/{name}/sessions/{sessionId}/workspace";
/** A generation as runners send it back: the quoted ETag the API answered. */
const GenerationHeader = z
  .string()
  .regex(/^"[^"\s]{1,200}"$/)
  .openapi({ description: "A workspace generation, as the API answered it in `etag`" });
const getWorkspace = createRoute({
  method: "get",
  path: WORKSPACE,
  summary:
    "Runner token only: the session's workspace as its runner last stored it (a session archive), to restore it on a new runner; for a session none was stored for yet, the nearest stored one of the sessions it was started from (a sub-agent's parent, and so on up), named in `keel-workspace-from`. With `If-None-Match: <generation>`, 304 while that is still the stored generation (the runner's copy is the current one)",
  request: {
    params: WorkspaceParams,
    headers: z.object({ "if-none-match": GenerationHeader.optional() }),
  },
  responses: {
    200: {
      description: "The archive",
      headers: z.object({
        "keel-workspace-from": z
          .string()
          .openapi({ description: "The session whose stored workspace this is" }),
        etag: z.string().optional().openapi({
          description:
            "The generation of the session's own stored workspace (absent when this is an ancestor's): send it back in `If-Match` to store, in `If-None-Match` to check",
        }),
      }),
      content: { [GZIP]: { schema: z.string().openapi({ format: "binary" }) } },
    },
    304: { description: "The generation named in If-None-Match is still the stored one" },
    ...problemResponses(),
  },
});
const putWorkspace = createRoute({
  method: "put",
  path: WORKSPACE,
  summary:
    "Runner token only: store the session's workspace (a session archive) if the stored one is still the generation named in `If-Match` (`If-None-Match: *`: none stored yet); 412 `workspace-changed` when another runner stored it since. Without either header (a runner of an earlier release) it replaces whatever is stored",
  request: {
    params: WorkspaceParams,
    headers: z.object({
      "if-match": GenerationHeader.optional(),
      "if-none-match": z.literal("*").optional(),
    }),
    body: { required: true, content: { [GZIP]: { schema: { type: "string", format: "binary" } } } },
  },
  responses: {
    204: {
      description: "Stored",
      headers: z.object({
        etag: z.string().openapi({ description: "The stored workspace's new generation" }),
      }),
    },
    ...problemResponses(412, 413, 415),
  },
});

/** Paths only runner tokens may use (everything else under /v1/environments takes an API key). */
const RUNNER_PATH =
  /^\/v1\/environments\/[^/]+\/(calls(:claim|\/[^/]+\/(heartbeat|result))|sessions\/[^/]+\/workspace)$/;

/** The two kinds of credential the environment routes take, by path. */
export function registerEnvironmentAuth(app: ApiRouter, deps: RouteContext): void {
  const tenantAuth = bearerAuth(deps.config.apiKeys, deps.tenants?.keys);
  const runner = deps.environments ? runnerAuth(deps.environments.store) : undefined;
  const { singleTenant } = deps.config;
  for (const path of ["/v1/environments", "/v1/environments/*"]) {
    app.use(path, (c, next) => {
      if (!RUNNER_PATH.test(c.req.path)) return tenantAuth(c, next);
      if (!runner) throw new ProblemError("not-implemented", "This deployment serves no environments.");
      return runner(c, next);
    });
    if (singleTenant !== undefined) app.use(path, singleTenantOnly(singleTenant));
  }
}

/** The environment named in the path, for the runner token's own environment only. */
function runnerScope(c: Context<ApiEnv>, name: string): { tenantId: string; environment: string } {
  // A token of another environment (or tenant) learns nothing: the same answer as a missing one.
  if (c.get("runnerEnvironment") !== name) throw new ProblemError("environment-not-found");
  return { tenantId: c.get("tenantId"), environment: name };
}

/**
 * The session's workspace for the runner token's own environment and, for a launched runner's
 * token, its own session only (another session: the same answer as a missing snapshot).
 */
function workspaceScope(
  c: Context<ApiEnv>,
  name: string,
  sessionId: string,
): { tenantId: string; environment: string } {
  const scope = runnerScope(c, name);
  const only = c.get("runnerSession");
  if (only !== undefined && only !== sessionId)
    throw new ProblemError("not-found", "No workspace is stored for this session.");
  return scope;
}

/** How many generations of parents a workspace lookup climbs (a guard against a header cycle). */
const MAX_FORK_DEPTH = 8;

/**
 * The workspace stored for `sessionId` in the environment (`current` when that is still the
 * generation `held`), else (a session whose runner stored none yet: a sub-agent's first call) the
 * nearest stored one of the sessions it was started from (its header's `parentSession`, then that
 * one's), all of the same tenant and environment, else the workspace workers recorded at the
 * session's leaf while a call of its run is headed to this environment. Only the session's own
 * stored one has a generation.
 */
async function storedWorkspaceOrAncestors(
  environments: EnvironmentStore,
  store: SessionStore,
  snapshots: WorkspaceSnapshots,
  runs: () => Promise<Pick<RunClient, "state">>,
  scope: { tenantId: string; environment: string },
  sessionId: string,
  held: string | undefined,
): Promise<{ archive: Uint8Array; from: string; generation?: string } | "current" | undefined> {
  const seen = new Set<string>();
  for (let from: string | undefined = sessionId; from !== undefined && seen.size < MAX_FORK_DEPTH; ) {
    if (seen.has(from)) return undefined;
    seen.add(from);
    const own = from === sessionId;
    const stored = await environments.getWorkspace(
      scope.tenantId,
      scope.environment,
      from,
      own ? held : undefined,
    );
    if (stored === "current") return "current";
    if (stored) return { archive: stored.archive, from, ...(own ? { generation: stored.generation } : {}) };
    const ref: SessionRef = { tenantId: scope.tenantId, sessionId: from };
    // A session deleted meanwhile ends the climb; a storage fault fails the request (the runner
    // tries again), never a silent start from an empty directory.
    const header = await store.getHeader(ref).catch((error: unknown) => {
      if (error instanceof SessionNotFoundError) return undefined;
      throw error;
    });
    from = header?.parentSession;
  }
  // Nothing a runner stored: the workspace workers recorded for the session, if any (imported
  // with its files, forked from a session whose tools ran on workers, or moved here) — only while
  // a call of the session's run is headed to this environment: a runner token reads no workspace
  // of its tenant's that its runners have no call of.
  const ref = { tenantId: scope.tenantId, sessionId };
  if (!(await callsHeadedTo(runs, ref, scope.environment))) return undefined;
  return leafWorkspaceArchive(store, snapshots, ref);
}

/** Whether the session's live run has a tool call that runs on `environment` (its state query). */
async function callsHeadedTo(
  runs: () => Promise<Pick<RunClient, "state">>,
  ref: SessionRef,
  environment: string,
): Promise<boolean> {
  const state = await (await runs()).state(ref).catch(() => undefined);
  return (state?.pendingToolCalls ?? []).some(
    (call) => call.ranOn === environment || call.ranOn?.endsWith(`@${environment}`) === true,
  );
}

/** API keys may not use runner routes, runner tokens may not manage environments. */
function tenantOnly(c: Context<ApiEnv>): string {
  if (c.get("runnerEnvironment") !== undefined)
    throw new ProblemError("unauthorized", "Runner tokens only run calls.");
  return c.get("tenantId");
}

/**
 * Claims one runner token may have waiting at once in one API process: each holds one of
 * Temporal's long polls (the namespace's pollers are shared by every tenant) and one of the
 * process's connections. A `keel runner` keeps one; runners sharing a token keep one each.
 */
const DEFAULT_WAITING_CLAIMS_PER_TOKEN = 32;

/** The environment routes; without `deps.environments` every one answers 501. */
export function environmentRoutes(deps: RouteContext) {
  const claimedHere = new ClaimedHere();
  /** Claims waiting in this process, by tenant, environment and token. */
  const waitingClaims = new Map<string, number>();
  const served = () => {
    if (!deps.environments)
      throw new ProblemError("not-implemented", "This deployment serves no environments.");
    const { store, markers, mcpListings } = deps.environments;
    const calls: RunnerCallDeps = {
      environments: store,
      store: deps.store,
      markers,
      ...(mcpListings ? { mcpListings } : {}),
      completion: async () => (await deps.runs()).activityCompletion(),
      tasks: () => deps.runs(),
      claimedHere,
      ...(deps.tenants ? { usage: deps.tenants.usage } : {}),
      ...(deps.vault ? { vault: deps.vault } : {}),
      warn: (msg, fields) => deps.log({ level: "warn", msg, ...fields }),
      publishLive: async (call, event) => {
        const ref = { tenantId: call.tenantId, sessionId: call.sessionId };
        const stream = WorkflowStreamClient.create((await deps.runs()).client, runWorkflowId(ref));
        stream.topic<LiveEvent>(RUN_STREAM_TOPIC.live).publish(event);
        // Disposing flushes and stops the client's background flusher, which otherwise wakes
        // every batch interval for as long as the API process lives (one per published event).
        await stream[Symbol.asyncDispose]();
      },
      now: deps.now,
    };
    return { environments: store, calls };
  };
  const requireEnvironment = async (tenantId: string, name: string) => {
    const environment = await served().environments.get(tenantId, name);
    if (!environment) throw new ProblemError("environment-not-found");
    return environment;
  };
  return createRouter()
    .openapi(createEnvironment, async (c) => {
      const { environments } = served();
      const tenantId = tenantOnly(c);
      const body = c.req.valid("json");
      const environment = {
        name: body.name,
        kind: body.kind,
        createdAt: new Date(deps.now()).toISOString(),
        ...(body.description !== undefined ? { description: body.description } : {}),
      };
      if (!(await environments.create(tenantId, environment))) throw new ProblemError("environment-exists");
      return c.json(environment, 201);
    })
    .openapi(listEnvironments, async (c) =>
      c.json({ environments: await served().environments.list(tenantOnly(c)) }, 200),
    )
    .openapi(getEnvironment, async (c) => {
      const { environments } = served();
      const tenantId = tenantOnly(c);
      const { name } = c.req.valid("param");
      const environment = await requireEnvironment(tenantId, name);
      const [tokens, held, waiting] = await Promise.all([
        environments.tokens(tenantId, name),
        environments.callIds(tenantId, name),
        // A launched environment's calls wait on their sessions' queues: only the held ones count.
        environment.kind === "runner"
          ? deps.runs().then((runs) => runs.waitingActivityTasks(runnerTaskQueue(tenantId, name)))
          : 0,
      ]);
      return c.json({ ...environment, tokens, waitingCalls: held.length + waiting }, 200);
    })
    .openapi(deleteEnvironment, async (c) => {
      const { environments } = served();
      const tenantId = tenantOnly(c);
      const { name } = c.req.valid("param");
      if (!(await environments.delete(tenantId, name))) throw new ProblemError("environment-not-found");
      return c.body(null, 204);
    })
    .openapi(issueToken, async (c) => {
      const { environments } = served();
      const tenantId = tenantOnly(c);
      const { name } = c.req.valid("param");
      await requireEnvironment(tenantId, name);
      return c.json(await environments.issueToken(tenantId, name), 201);
    })
    .openapi(revokeToken, async (c) => {
      const { environments } = served();
      const tenantId = tenantOnly(c);
      const { name, tokenId } = c.req.valid("param");
      if (!(await environments.revoke(tenantId, name, tokenId)))
        throw new ProblemError("not-found", "No such token.");
      return c.body(null, 204);
    })
    .openapi(claim, async (c) => {
      const { environments, calls } = served();
      const { name } = c.req.valid("param");
      const scope = runnerScope(c, name);
      const body = ClaimBody.parse((await c.req.json().catch(() => ({}))) ?? {});
      const token = /^Bearer (.+)$/.exec(c.req.header("authorization") ?? "")?.[1] ?? "";
      const session = c.get("runnerSession");
      // Any call of the environment may be an MCP call or listing: a runner must run them.
      if (body.runs?.includes("mcp") !== true)
        throw new ProblemError(
          "invalid-request",
          'This runner does not say it runs MCP servers (`runs: ["mcp"]`); run a `keel runner` of this release.',
        );
      const tokenId = c.get("runnerTokenId");
      const limit = deps.environments?.waitingClaimsPerToken ?? DEFAULT_WAITING_CLAIMS_PER_TOKEN;
      const key = JSON.stringify([scope.tenantId, scope.environment, tokenId]);
      const waiting = waitingClaims.get(key) ?? 0;
      if (waiting >= limit)
        throw new ProblemError(
          "too-many-claims",
          `This runner token has ${waiting} claims waiting at this API process, its most; claim again when one ends.`,
          { limit },
          { "retry-after": "1" },
        );
      waitingClaims.set(key, waiting + 1);
      try {
        const call = await claimCall(calls, scope.tenantId, scope.environment, body.waitSeconds * 1000, {
          signal: c.req.raw.signal,
          ...(session !== undefined ? { sessionId: session } : {}),
          ...(tokenId !== undefined ? { identity: `keel runner (token ${tokenId})` } : {}),
          secrets: body.runs?.includes("secrets") === true,
          stillAuthorized: async () => (await environments.tokenOwner(token)) !== undefined,
        });
        return call ? c.json(call, 200) : c.body(null, 204);
      } finally {
        const left = (waitingClaims.get(key) ?? 1) - 1;
        if (left > 0) waitingClaims.set(key, left);
        else waitingClaims.delete(key);
      }
    })
    .openapi(heartbeat, async (c) => {
      const { calls } = served();
      const { name, callId } = c.req.valid("param");
      const scope = runnerScope(c, name);
      const { claimId, partial } = c.req.valid("json");
      const answer = await heartbeatCall(
        calls,
        scope.tenantId,
        scope.environment,
        callId,
        claimId,
        c.get("runnerAuthorized") ?? Promise.resolve(false),
        partial,
      );
      if (answer === "unauthorized") throw unauthorized();
      if (answer === "gone")
        throw new ProblemError("call-not-found", "This runner no longer holds the call; stop it.");
      return c.json({ cancel: answer === "cancel" }, 200);
    })
    .openapi(postResult, async (c) => {
      const { calls } = served();
      const { name, callId } = c.req.valid("param");
      const scope = runnerScope(c, name);
      const { claimId, ...report } = c.req.valid("json");
      const stored = await completeCall(
        calls,
        scope.tenantId,
        scope.environment,
        callId,
        claimId,
        report,
        c.get("runnerAuthorized") ?? Promise.resolve(false),
      );
      if (stored === "unauthorized") throw unauthorized();
      if (stored === "not-held")
        throw new ProblemError(
          "call-not-found",
          "This runner no longer holds the call; its result is not stored.",
        );
      if (stored === "wrong-kind")
        throw new ProblemError(
          "invalid-request",
          "This result does not answer the call: a tool call's result is `output`, a listing's is `mcpTools`.",
        );
      return c.json({ stored: true as const }, 200);
    })
    .openapi(getWorkspace, async (c) => {
      const { environments } = served();
      const { name, sessionId } = c.req.valid("param");
      const held = c.req.valid("header")["if-none-match"];
      const scope = workspaceScope(c, name, sessionId);
      const found = await storedWorkspaceOrAncestors(
        environments,
        deps.store,
        deps.snapshots,
        deps.runs,
        scope,
        sessionId,
        held,
      );
      if (found === "current") return c.body(null, 304, held !== undefined ? { etag: held } : {});
      if (!found) throw new ProblemError("not-found", "No workspace is stored for this session.");
      return c.body(found.archive as Uint8Array<ArrayBuffer>, 200, {
        "content-type": GZIP,
        "keel-workspace-from": found.from,
        ...(found.generation !== undefined ? { etag: found.generation } : {}),
      });
    })
    .openapi(putWorkspace, async (c) => {
      const { environments } = served();
      const { name, sessionId } = c.req.valid("param");
      const headers = c.req.valid("header");
      const scope = workspaceScope(c, name, sessionId);
      if ((c.req.header("content-type") ?? "").split(";")[0]?.trim() !== GZIP)
        throw new ProblemError("unsupported-media-type", "Send the session archive as application/gzip.");
      const body = new Uint8Array(await c.req.arrayBuffer());
      // Only a gzip stream is kept; the runner that restores it unpacks it with the archive's checks.
      if (body[0] !== 0x1f || body[1] !== 0x8b)
        throw new ProblemError("unsupported-media-type", "The body is not a gzip stream.");
      const expected = headers["if-match"] ?? (headers["if-none-match"] === "*" ? "absent" : "any");
      const stored = await environments.putWorkspace(
        scope.tenantId,
        scope.environment,
        sessionId,
        body,
        expected,
      );
      if (stored === "changed")
        throw new ProblemError(
          "workspace-changed",
          "Another runner stored this session's workspace since this copy was restored: restore the stored one before storing.",
        );
      return c.body(null, 204, { etag: stored.generation });
    });
}
