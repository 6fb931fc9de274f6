/**
 * The API on the real stack: a run stage (Temporal, S3, worker, local LLM) plus the Hono app with
 * two tenants, and a small request helper. Requests go through `app.request`, the same fetch
 * entry the Node server and the Lambda adapter use.
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { type ApiApp, createApp } from "../../../src/api/app";
import type { SlackConfig } from "../../../src/api/config";
import type { ApiDependencies } from "../../../src/api/route-context";
import { tenantServices } from "../../../src/api/tenant-runs";
import { EvalStore } from "../../../src/evals/eval-store";
import { loadCatalog } from "../../../src/providers/models";
import { JsonObjects } from "../../../src/store/json-objects";
import { WorkspaceSnapshots } from "../../../src/store/workspace-snapshots";
import type { SlotClaim } from "../../../src/tenants/admission";
import { TenantStore } from "../../../src/tenants/store";
import { s3Client, s3Settings, uniqueName } from "../../support/integration-env";
import { createRunStage, eventually, type RunStage } from "../../support/run-harness";

export const PROBLEM_JSON = "application/problem+json";

export interface ApiStage {
  stage: RunStage;
  app: ApiApp;
  /** API keys of two tenants; tenant A is the run stage's tenant. */
  keys: { a: string; b: string };
  /** The operator's key for the admin API (KEEL_ADMIN_KEY_SHA256). */
  adminKey: string;
  tenants: { a: string; b: string };
  objects: JsonObjects;
  call: Caller;
  /** Calls to another app on the same stage whose dependencies differ by `overrides` (faults). */
  callerWith(overrides: Partial<ApiDependencies>): Caller;
  /** A fresh session id. */
  sessionId(): string;
  /** A new tenant in the tenant store (admin API) with one stored key. */
  storedTenant(): Promise<{ tenantId: string; key: string }>;
  /**
   * A message body whose run calls bash once and waits for its approval (policy `ask`): a run
   * that stays live, holding its tenant's concurrency slot, until it is aborted.
   */
  waitingRunBody(): { text: string; policy: Record<string, unknown> };
  /** The scenario `waitingRunBody` uses, for starts that take no policy (Slack's team asks for bash). */
  waitingScenario(): string;
  /** Resolves once the session's run waits for an approval (it is live, holding its slot). */
  untilWaitingForApproval(ref: { tenantId: string; sessionId: string }): Promise<void>;
  /**
   * The sessions named by the tenant's concurrency slot claims `slot-0` … `slot-{limit-1}`, in slot
   * order (a claim given back is left out): who holds the slots, whichever path started the run.
   */
  slotHolders(tenantId: string, limit: number): Promise<string[]>;
  /** The runs the tenant's usage counts over the last 30 days (every path counts its starts there). */
  runsCounted(key: string): Promise<number>;
  close(): Promise<void>;
}

export type Caller = (method: string, path: string, options?: CallOptions) => Promise<ApiResponse>;

export interface CallOptions {
  key?: string | null;
  json?: unknown;
  body?: string;
  headers?: Record<string, string>;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are asserted field by field in tests
  body: any;
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

export async function createApiStage(
  options: {
    /** Slack settings for the stage's tenants (tenant A owns Slack's sessions in the tests). */
    slack?: (tenants: { a: string; b: string }) => SlackConfig;
    overrides?: Partial<ApiDependencies>;
    /** Settings merged over the stage's API configuration (e.g. the outbound URLs it allows). */
    config?: (stage: RunStage) => Partial<ApiDependencies["config"]>;
    withWorker?: boolean;
    /** Extra environment of the worker process (e.g. where it posts chat replies). */
    workerEnv?: Record<string, string>;
  } = {},
): Promise<ApiStage> {
  const stage = await createRunStage();
  if (options.withWorker !== false) await stage.startWorker(options.workerEnv);
  const keys = { a: `key-a-${uniqueName("k")}`, b: `key-b-${uniqueName("k")}` };
  const tenants = { a: stage.tenantId, b: uniqueName("tenant") };
  const adminKey = `admin-${uniqueName("k")}`;
  const s3 = s3Client();
  const settings = s3Settings();
  const objects = new JsonObjects(s3, settings.bucket, settings.prefix);
  const dependencies: ApiDependencies = {
    config: {
      apiKeys: { [sha256(keys.a)]: tenants.a, [sha256(keys.b)]: tenants.b },
      adminKeyDigests: [sha256(adminKey)],
      bodyLimitBytes: 256 * 1024,
      allowDirectoryWorkspaces: false,
      sseMaxSeconds: 0,
      defaultModel: "local-chat",
      slack: options.slack?.(tenants),
      ...options.config?.(stage),
    },
    runs: async () => stage.runs,
    store: stage.store,
    snapshots: new WorkspaceSnapshots(s3, settings),
    objects,
    evals: new EvalStore(s3, settings.bucket, settings.prefix),
    catalog: loadCatalog(),
    log: () => undefined,
    tenants: tenantServices(s3, settings, async () => stage.runs),
    ...options.overrides,
  };
  const app = createApp(dependencies);

  const callerOf =
    (target: ApiApp): Caller =>
    async (method, path, callOptions = {}) => {
      const headers: Record<string, string> = { ...callOptions.headers };
      const key = callOptions.key === undefined ? keys.a : callOptions.key;
      if (key !== null) headers.authorization = `Bearer ${key}`;
      let body = callOptions.body;
      if (callOptions.json !== undefined) {
        body = JSON.stringify(callOptions.json);
        headers["content-type"] ??= "application/json";
      }
      const response = await target.request(path, { method, headers, body });
      const text = await response.text();
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      return { status: response.status, headers: response.headers, text, body: parsed };
    };

  const call = callerOf(app);
  const tenantStore = new TenantStore(s3, settings.bucket, settings.prefix);
  const SlotSchema: z.ZodType<SlotClaim> = z.object({ sessionId: z.string(), claimedAt: z.number() });
  const waitingScenario = () => {
    const scenario = uniqueName("waiting");
    stage.llm.addScenario(scenario, {
      turns: [{ toolCalls: [{ name: "bash", arguments: { command: "echo hi" } }] }],
      after: { text: "done" },
    });
    return scenario;
  };

  return {
    stage,
    app,
    keys,
    adminKey,
    tenants,
    objects,
    call,
    callerWith: (overrides) => callerOf(createApp({ ...dependencies, ...overrides })),
    sessionId: () => uniqueName("session"),
    async storedTenant() {
      const tenantId = uniqueName("tenant");
      expect(
        (await call("POST", "/v1/admin/tenants", { key: adminKey, json: { id: tenantId } })).status,
      ).toBe(201);
      const issued = await call("POST", `/v1/admin/tenants/${tenantId}/keys`, { key: adminKey, json: {} });
      expect(issued.status).toBe(201);
      return { tenantId, key: issued.body.key as string };
    },
    waitingRunBody: () => ({
      text: `[scenario:${waitingScenario()}] go`,
      policy: { rules: [{ tool: "bash", action: "ask" }], approvalTimeoutMs: 120_000 },
    }),
    waitingScenario,
    async untilWaitingForApproval(ref) {
      await eventually(
        async () => ((await stage.runs.state(ref))?.status === "waiting_approval" ? true : undefined),
        30_000,
        `${ref.sessionId} waiting for an approval`,
      );
    },
    async slotHolders(tenantId, limit) {
      const claims = await Promise.all(
        Array.from({ length: limit }, (_, i) =>
          tenantStore.objects.read(`${tenantStore.folder(tenantId)}quota/runs/slot-${i}.json`, SlotSchema),
        ),
      );
      return claims.flatMap((claim) => (claim && claim.claimedAt !== 0 ? [claim.sessionId] : []));
    },
    async runsCounted(key) {
      const usage = await call("GET", "/v1/usage", { key });
      expect(usage.status).toBe(200);
      return (usage.body.days as Array<{ runs: number }>).reduce((sum, day) => sum + day.runs, 0);
    },
    async close() {
      await stage.close();
      s3.destroy();
    },
  };
}

/** Asserts a problem+json response with the given status and slug. */
export function expectProblem(response: ApiResponse, status: number, slug: string): void {
  expect({ status: response.status, contentType: response.headers.get("content-type") }).toEqual({
    status,
    contentType: PROBLEM_JSON,
  });
  expect(response.body).toMatchObject({
    type: `https://keel.dev/problems/${slug}`,
    status,
    title: expect.any(String),
  });
}
