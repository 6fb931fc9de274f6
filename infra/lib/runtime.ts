/** What the API and the workers share: their environment, Lambda runtime settings, log groups. */
import { join, resolve } from "node:path";
import { RemovalPolicy } from "aws-cdk-lib";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as nodejs from "aws-cdk-lib/aws-lambda-nodejs";
import * as logs from "aws-cdk-lib/aws-logs";
import type { Construct } from "constructs";
import { type KeelInfraConfig, UNSANDBOXED_MODES } from "./config";
import type { SessionBucket } from "./storage";

/** The repository root: Lambda entries and the Dockerfile are resolved against it. */
export const REPO_ROOT = resolve(__dirname, "../..");
/** Node 22: Lambda deprecated nodejs20.x on 2026-04-30; Keel runs on Node >= 20.6. */
const LAMBDA_RUNTIME = lambda.Runtime.NODEJS_22_X;
const LAMBDA_ARCHITECTURE = lambda.Architecture.ARM_64;
/** The Lambda extension serving Secrets Manager values on localhost (see `secrets.ts`). */
const SECRETS_EXTENSION_VERSION = lambda.ParamsAndSecretsVersions.V1_0_103;

/** Non-secret settings every Keel process reads (see `src/worker/config.ts`, `src/api/config.ts`). */
export function keelEnvironment(config: KeelInfraConfig, storage: SessionBucket, region: string) {
  return {
    KEEL_TEMPORAL_ADDRESS: config.temporal.address,
    KEEL_TEMPORAL_NAMESPACE: config.temporal.namespace,
    KEEL_TASK_QUEUE: config.temporal.taskQueue,
    KEEL_S3_BUCKET: storage.bucket.bucketName,
    KEEL_S3_PREFIX: storage.prefix,
    KEEL_S3_REGION: region,
    NODE_OPTIONS: "--enable-source-maps",
    ...telemetryEnvironment(config),
  };
}

/** Traces and metrics for the API and the workers, when the config names a receiver. */
export function telemetryEnvironment(config: KeelInfraConfig): Record<string, string> {
  const { otelEndpoint, otelCaptureContent } = config.observability;
  if (otelEndpoint === undefined) return {};
  return {
    KEEL_OTEL_ENDPOINT: otelEndpoint,
    ...(otelCaptureContent ? { KEEL_OTEL_CAPTURE_CONTENT: "true" } : {}),
  };
}

/**
 * The tool sandbox's settings for the workers: off only where the mode's hosts cannot create user
 * namespaces (fargate, lambda), and then with the one tenant served or with no tool call run on
 * the workers, without which the worker refuses to start (config validation makes one of them
 * present there).
 */
export function sandboxEnvironment(config: KeelInfraConfig): Record<string, string> {
  return {
    ...tenancyEnvironment(config),
    ...(UNSANDBOXED_MODES.has(config.workers.mode) ? { KEEL_SANDBOX: "off" } : {}),
  };
}

/**
 * For the API and the workers: KEEL_SINGLE_TENANT when the deployment declares its one tenant,
 * KEEL_WORKER_TOOLS=off when its workers run no tool call.
 */
export function tenancyEnvironment(config: KeelInfraConfig): Record<string, string> {
  return {
    ...(config.singleTenant !== undefined ? { KEEL_SINGLE_TENANT: config.singleTenant } : {}),
    ...(config.workerTools ? {} : { KEEL_WORKER_TOOLS: "off" }),
  };
}

/** Provider base URLs (OpenAI-compatible or proxied endpoints) when configured. */
export function providerEnvironment(config: KeelInfraConfig): Record<string, string> {
  const env: Record<string, string> = {};
  if (config.providers.openaiBaseUrl) env.OPENAI_BASE_URL = config.providers.openaiBaseUrl;
  if (config.providers.anthropicBaseUrl) env.ANTHROPIC_BASE_URL = config.providers.anthropicBaseUrl;
  return env;
}

export function keelLogGroup(scope: Construct, id: string, config: KeelInfraConfig): logs.LogGroup {
  return new logs.LogGroup(scope, id, {
    retention: config.observability.logRetentionDays as logs.RetentionDays,
    removalPolicy: config.production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
  });
}

/** Bundling with the esbuild installed in the repository: never Docker. */
export function localBundling(overrides: Partial<nodejs.BundlingOptions> = {}): nodejs.BundlingOptions {
  return {
    forceDockerBundling: false,
    format: nodejs.OutputFormat.CJS,
    target: "node20",
    minify: true,
    sourceMap: true,
    // Ship the SDK versions the code was tested with rather than the runtime's copies.
    externalModules: [],
    ...overrides,
  };
}

/** Function settings shared by the API and the Lambda worker. */
export function keelFunctionDefaults(
  entry: string,
): Pick<
  nodejs.NodejsFunctionProps,
  | "entry"
  | "runtime"
  | "architecture"
  | "projectRoot"
  | "depsLockFilePath"
  | "paramsAndSecrets"
  | "loggingFormat"
> {
  return {
    entry: resolve(REPO_ROOT, entry),
    runtime: LAMBDA_RUNTIME,
    architecture: LAMBDA_ARCHITECTURE,
    projectRoot: REPO_ROOT,
    depsLockFilePath: join(REPO_ROOT, "package-lock.json"),
    paramsAndSecrets: lambda.ParamsAndSecretsLayerVersion.fromVersion(SECRETS_EXTENSION_VERSION),
    // Keel writes JSON lines itself; the JSON format keeps platform lines structured too.
    loggingFormat: lambda.LoggingFormat.JSON,
  };
}
