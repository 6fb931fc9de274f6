/**
 * `keel dev --runner`: the dev tenant's `runner` environment, a fresh runner token for it each
 * start, and the tenant's default environment pointing at it (so every run without `--env` sends
 * its tools to the runner). Without `--runner` the default is taken away again, so a plain
 * `keel dev` after a `--runner` one runs tools on the worker as before.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type ApiClient, ApiError } from "../../api-client/client";
import { createS3Client, type S3Settings } from "../../store/s3-config";
import { TenantStore } from "../../tenants/store";
import {
  runnerProcess,
  type SupervisedWorker,
  startSupervisedWorker,
  WORKER_STOP_GRACE_MS,
} from "./worker-process";

/** The environment `keel dev --runner` creates for its tenant. */
export const DEV_RUNNER_ENVIRONMENT = "dev-runner";

/** The stack's runner: its supervised process, where it keeps its files, and how to stop it. */
export interface DevRunner {
  process: SupervisedWorker;
  workspaceRoot: string;
  logFile: string;
  /** Stops the runner, then revokes its token (while the API is still up). */
  stop(): Promise<void>;
}

/**
 * Issues the runner a token (`issueDevRunnerToken`) and starts `keel runner --env dev-runner` under
 * the stack's state folder, supervised like the worker (`report` hears of deaths and restarts).
 * Its whole environment besides PATH and HOME is the API's URL and the token: nothing of the
 * worker's S3, Temporal or provider settings.
 */
export async function startDevRunner(
  client: ApiClient,
  apiUrl: string,
  dataDir: string,
  report: (line: string) => void,
): Promise<DevRunner> {
  const workspaceRoot = join(dataDir, "runner", DEV_RUNNER_ENVIRONMENT);
  const logFile = join(dataDir, "runner.log");
  const { token, tokenId } = await issueDevRunnerToken(client, join(dataDir, "runner-token.json"));
  const process = await startSupervisedWorker(
    {
      logFile,
      env: { KEEL_API_URL: apiUrl, KEEL_RUNNER_TOKEN: token },
      kind: runnerProcess(DEV_RUNNER_ENVIRONMENT, ["--workspace-root", workspaceRoot]),
    },
    report,
  );
  return {
    process,
    workspaceRoot,
    logFile,
    stop: async () => {
      await process.stop(WORKER_STOP_GRACE_MS);
      await revokeDevRunnerToken(client, tokenId);
    },
  };
}

interface DevRunnerToken {
  token: string;
  tokenId: string;
}

/**
 * Creates the environment unless it exists (as a `runner` one: another kind of that name is an
 * error), revokes the token the previous start recorded in `tokenFile`, issues a new one and
 * records its id there. Runs through the API with the tenant's key, as `keel env` would.
 */
async function issueDevRunnerToken(client: ApiClient, tokenFile: string): Promise<DevRunnerToken> {
  const environments = client.api.v1.environments;
  const name = DEV_RUNNER_ENVIRONMENT;
  try {
    await client.json(environments.$post({ json: { name, kind: "runner" } }));
  } catch (error) {
    if (!(error instanceof ApiError && error.slug === "environment-exists")) throw error;
    const existing = await client.json(environments[":name"].$get({ param: { name } }));
    if (existing.kind !== "runner")
      throw new Error(
        `environment ${name} exists as a ${existing.kind} environment; delete it (keel env delete ${name})`,
      );
  }
  const previous = recordedTokenId(tokenFile);
  if (previous !== undefined) await revokeDevRunnerToken(client, previous);
  const issued = await client.json(environments[":name"].tokens.$post({ param: { name } }));
  writeFileSync(tokenFile, `${JSON.stringify({ tokenId: issued.tokenId })}\n`);
  return { token: issued.token, tokenId: issued.tokenId };
}

/** Revokes one of the environment's tokens; one already gone is no error. */
async function revokeDevRunnerToken(client: ApiClient, tokenId: string): Promise<void> {
  try {
    await client.response(
      client.api.v1.environments[":name"].tokens[":tokenId"].$delete({
        param: { name: DEV_RUNNER_ENVIRONMENT, tokenId },
      }),
    );
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 404)) throw error;
  }
}

function recordedTokenId(tokenFile: string): string | undefined {
  try {
    const { tokenId } = JSON.parse(readFileSync(tokenFile, "utf8")) as { tokenId?: unknown };
    return typeof tokenId === "string" ? tokenId : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Points the tenant's default run environment (tenant setting `defaults.environment`) at the dev
 * runner's environment (`use`), or removes that default when it names it (`!use`); any other
 * setting of the tenant is kept. Written to the tenant store in the stack's bucket directly: the
 * dev API has no operator key.
 */
export async function setDevRunnerDefault(s3: S3Settings, tenantId: string, use: boolean): Promise<void> {
  const client = createS3Client(s3);
  try {
    const store = new TenantStore(client, s3.bucket, s3.prefix);
    const settings = await store.getSettings(tenantId);
    const { environment, ...otherDefaults } = settings.defaults ?? {};
    if (use === (environment === DEV_RUNNER_ENVIRONMENT)) return;
    const defaults = use ? { ...otherDefaults, environment: DEV_RUNNER_ENVIRONMENT } : otherDefaults;
    const { defaults: _dropped, ...rest } = settings;
    await store.putSettings(tenantId, Object.keys(defaults).length > 0 ? { ...rest, defaults } : rest);
  } finally {
    client.destroy();
  }
}
