/**
 * The HTTP API as one Hono app: served by the local Node server (`server.ts`) and by the Lambda
 * handler (`lambda.ts`). Routes are declared with `@hono/zod-openapi`, so the schemas that
 * validate requests also produce `GET /v1/openapi.json`. Docs: docs/api.md.
 */

import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import { createLogger, recordLogger } from "../logging/logger";
import { RunNotAnsweringError } from "../run-client/session-runs";
import { InvalidSessionDataError, SessionExistsError, SessionNotFoundError } from "../store/session-errors";
import { InvalidIdError } from "../store/session-keys";
import { traceRequests } from "../telemetry/http";
import { instrumentation } from "../telemetry/instrumentation";
import { adminAuth } from "./admin-auth";
import { allowedMethods, isAllowed, literalMethods } from "./allowed-methods";
import { bearerAuth, singleTenantOnly } from "./auth";
import { idempotency } from "./idempotency";
import { MCP_PATH, mcpEndpoint } from "./mcp-endpoint";
import { ProblemError, type ProblemSlug, problemResponse } from "./problems";
import type { ApiDependencies, RouteContext } from "./route-context";
import { createRouter } from "./router";
import { adminRoutes } from "./routes/admin";
import { budgetRoutes } from "./routes/budget";
import { diffRoutes } from "./routes/diff";
import { environmentRoutes, registerEnvironmentAuth } from "./routes/environments";
import { evalRoutes } from "./routes/evals";
import { mcpRoutes } from "./routes/mcp";
import { replayRoutes } from "./routes/replay";
import { messageBodyOptions, runRoutes } from "./routes/runs";
import { scheduleRoutes } from "./routes/schedules";
import { secretRoutes } from "./routes/secrets";
import { sessionRoutes } from "./routes/sessions";
import { transferRoutes } from "./routes/transfer";
import { treeRoutes } from "./routes/tree";
import { usageRoutes } from "./routes/usage";
import { viewerRoutes } from "./routes/viewer";
import { webhookRoutes } from "./routes/webhooks";
import { registerSlackRoutes } from "./slack/events";
import { UNAVAILABLE_PROBLEMS, unavailableDependency } from "./unavailable";

const API_VERSION = "0.1.0";

/**
 * The app with every session route in its type: `hc<ApiApp>(url)` from `hono/client` is a typed
 * client of the API (the `keel` CLI uses it).
 */
export type ApiApp = ReturnType<typeof createApp>;

const HTTP_EXCEPTION_SLUGS: Partial<Record<number, ProblemSlug>> = {
  400: "malformed-body",
  401: "unauthorized",
  404: "not-found",
  413: "payload-too-large",
  415: "unsupported-media-type",
};

/** What a client is told to wait before retrying when a dependency is down. */
const RETRY_AFTER_SECONDS = 2;

function methodNotAllowed(method: string, allowed: readonly string[]): Response {
  return problemResponse(
    "method-not-allowed",
    `${method} is not served at this path.`,
    {},
    {
      allow: allowed.join(", "),
    },
  );
}

/** JSON lines on stdout with the worker's field names (logging/logger). */
const defaultLog = recordLogger(createLogger("api"));

/** Maps any error to its problem response. Unknown errors become 500 and are logged. */
function errorResponse(error: unknown, c: Context, deps: RouteContext): Response {
  if (error instanceof ProblemError) {
    return problemResponse(error.slug, error.detail, error.extensions, error.headers);
  }
  if (error instanceof SessionNotFoundError) return problemResponse("session-not-found");
  if (error instanceof SessionExistsError) return problemResponse("session-exists");
  if (error instanceof InvalidSessionDataError) return problemResponse("invalid-session-file", error.message);
  if (error instanceof InvalidIdError) return problemResponse("invalid-request", error.message);
  if (error instanceof HTTPException) {
    const slug = HTTP_EXCEPTION_SLUGS[error.status];
    if (slug) return problemResponse(slug, error.message || undefined);
  }
  deps.onFailure?.(error);
  const method = c.req.method;
  const path = c.req.path;
  if (error instanceof RunNotAnsweringError) {
    deps.log({ level: "warn", msg: "run not answering", method, path, error: error.message });
    return problemResponse(
      "run-not-answering",
      `The run cannot be read now: ${error.why}. Temporal keeps the run; it goes on when a worker takes it.`,
      {},
      { "retry-after": String(RETRY_AFTER_SECONDS) },
    );
  }
  const unavailable = unavailableDependency(error);
  if (unavailable) {
    const { slug, msg } = UNAVAILABLE_PROBLEMS[unavailable];
    deps.log({ level: "warn", msg, method, path, error: String(error) });
    return problemResponse(slug, "Retry shortly.", {}, { "retry-after": String(RETRY_AFTER_SECONDS) });
  }
  deps.log({
    level: "error",
    msg: "unhandled error",
    method,
    path,
    error: error instanceof Error ? (error.stack ?? error.message) : String(error),
  });
  return problemResponse("internal-error");
}

export function createApp(dependencies: ApiDependencies) {
  const deps: RouteContext = {
    ...dependencies,
    now: dependencies.now ?? Date.now,
    log: dependencies.log ?? defaultLog,
  };
  const app = createRouter();
  if (instrumentation()) app.use("*", traceRequests());
  app.onError((error, c) => errorResponse(error, c, deps));
  app.notFound((c) => {
    const allowed = allowedMethods(app.routes, c.req.path);
    if (allowed.length === 0) return problemResponse("not-found", "No such route.");
    return methodNotAllowed(c.req.method, allowed);
  });
  // A literal route's path is that route's alone, also for other methods: `GET /v1/sessions/import`
  // is 405, not a read of a session called "import".
  app.use("*", async (c, next) => {
    const literal = literalMethods(app.routes, c.req.path);
    if (literal.length === 0 || isAllowed(c.req.method, literal)) return next();
    return methodNotAllowed(c.req.method, literal);
  });

  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", { type: "http", scheme: "bearer" });
  const limit = bodyLimit({
    maxSize: deps.config.bodyLimitBytes,
    onError: () =>
      problemResponse(
        "payload-too-large",
        `Request bodies are limited to ${deps.config.bodyLimitBytes} bytes.`,
      ),
  });
  const { singleTenant } = deps.config;
  // `/v1/schedules/*` matches `/v1/schedules` too: listed once, so its middleware runs once per
  // request (twice would claim the Idempotency-Key twice and refuse the create as in use).
  for (const path of ["/v1/sessions", "/v1/sessions/*", "/v1/schedules/*", "/v1/evals/*", "/v1/usage"]) {
    app.use(path, bearerAuth(deps.config.apiKeys, deps.tenants?.keys));
    if (singleTenant !== undefined) app.use(path, singleTenantOnly(singleTenant));
    app.use(path, limit, idempotency(deps.objects, deps.now, deps.log));
  }
  // No idempotency records: the secrets routes are PUT, GET and DELETE (and a record would keep the
  // body's digest); the webhook routes' answers carry signing secrets, which a record would keep;
  // an MCP request is a JSON-RPC exchange whose tools pass their own keys on.
  for (const path of ["/v1/secrets/*", "/v1/webhooks/*", MCP_PATH]) {
    app.use(path, bearerAuth(deps.config.apiKeys, deps.tenants?.keys));
    if (singleTenant !== undefined) app.use(path, singleTenantOnly(singleTenant));
    app.use(path, limit);
  }
  app.use("/v1/integrations/*", limit);
  app.use("/v1/admin/*", adminAuth(deps.config.adminKeyDigests ?? []), limit);
  registerEnvironmentAuth(app, deps);
  for (const path of ["/v1/environments", "/v1/environments/*"]) app.use(path, limit);

  registerSlackRoutes(app, deps);

  app.get("/healthz", (c) => c.json({ ok: true }));
  app.doc31("/v1/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: "Keel API",
      version: API_VERSION,
      description: "Durable coding-agent runs. Errors are application/problem+json (see docs/api.md).",
    },
    security: [{ bearer: [] }],
  });
  // Not in the document: a JSON-RPC endpoint that describes itself (tools/list); docs/integrations.md.
  app.post(
    MCP_PATH,
    mcpEndpoint({ fetch: (request) => app.fetch(request), bodyOptions: messageBodyOptions(deps) }),
  );
  // Mounted after the middleware above, which therefore runs before every one of them.
  return app
    .route("/", sessionRoutes(deps))
    .route("/", runRoutes(deps))
    .route("/", budgetRoutes(deps))
    .route("/", treeRoutes(deps))
    .route("/", replayRoutes(deps))
    .route("/", transferRoutes(deps))
    .route("/", viewerRoutes(deps))
    .route("/", scheduleRoutes(deps))
    .route("/", environmentRoutes(deps))
    .route("/", mcpRoutes(deps))
    .route("/", diffRoutes(deps))
    .route("/", adminRoutes(deps))
    .route("/", usageRoutes(deps))
    .route("/", secretRoutes(deps))
    .route("/", webhookRoutes(deps))
    .route("/", evalRoutes(deps));
}
