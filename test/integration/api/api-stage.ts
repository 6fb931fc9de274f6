/**
 * The API on the real stack: a run stage (Temporal, S3, worker, local LLM) plus the Hono app with
 * two tenants, and a small request helper. Requests go through `app.request`, the same fetch
 * entry the Node server and the Lambda adapter use.
 */
import { createHash } from "node:crypto";
import { type ApiApp, type ApiDependencies, createApp } from "../../../src/api/app";
import type { SlackConfig } from "../../../src/api/config";
import { JsonObjects } from "../../../src/api/json-objects";
import { tenantServices } from "../../../src/api/tenant-runs";
import { loadCatalog } from "../../../src/providers/models";
import { WorkspaceSnapshots } from "../../../src/store/workspace-snapshots";
import { s3Client, s3Settings, uniqueName } from "../../support/integration-env";
import { createRunStage, type RunStage } from "../../support/run-harness";

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

  return {
    stage,
    app,
    keys,
    adminKey,
    tenants,
    objects,
    call: callerOf(app),
    callerWith: (overrides) => callerOf(createApp({ ...dependencies, ...overrides })),
    sessionId: () => uniqueName("session"),
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
