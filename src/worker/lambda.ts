/**
 * The worker as a Temporal serverless worker on AWS Lambda (`@temporalio/lambda-worker`). Temporal
 * invokes a published version of the function when the task queue has work; each invocation polls
 * until shortly before its deadline, then drains and returns.
 *
 * Configuration: the KEEL_* variables of `config.ts`, plus `KEEL_WORKER_DEPLOYMENT_NAME` and
 * `KEEL_WORKER_BUILD_ID` (the worker deployment version). Secrets arrive as `<NAME>_SECRET_ARN`
 * and are read once per execution environment through the AWS Parameters and Secrets Lambda
 * extension (see `resolveSecretEnv`).
 *
 * Differences from the long-running worker: there is no per-process task queue — every activity,
 * tool calls included, runs on the shared queue — and session workspaces live in this execution
 * environment's /tmp; a tool call that lands on an environment without the workspace restores it
 * from its snapshot in S3 first (docs/deploy.md, "Lambda workers"). MCP servers a run's calls
 * started are closed when the invocation returns: a frozen environment must not keep their
 * processes (or HTTP sessions) for a later invocation that may never come.
 *
 * With `KEEL_OTEL_ENDPOINT` the environment starts telemetry once, loads the traced workflow
 * bundle (`KEEL_WORKFLOW_BUNDLE_TRACED`, packaged beside the plain one) and exports the spans and
 * metrics each invocation made before it returns (`flushedInvocation`). Without it nothing of
 * telemetry is created.
 */
import { runWorker } from "@temporalio/lambda-worker";
import { z } from "zod";
import {
  describeUnknownSettings,
  parseSettings,
  type SettingsShape,
  unknownSettings,
} from "../core/env-settings";
import type { McpConnections } from "../mcp/connections";
import { createS3Client } from "../store/s3-config";
import { flushedInvocation } from "../telemetry/lambda";
import { startTelemetry, type Telemetry } from "../telemetry/sdk";
import { workerConfigFromEnv, workflowBundleOf } from "./config";
import { log } from "./log";
import { resolveSecretEnv } from "./secrets";
import { temporalMetricsExporter, workerTelemetryOptions } from "./telemetry";
import { commonWorkerOptions, workerActivities, workerMcpConnections } from "./worker-setup";

/** The handler `runWorker` builds. */
type LambdaWorkerHandler = ReturnType<typeof runWorker>;
/** What the handler reads from Lambda's context object. */
export type LambdaContext = Parameters<LambdaWorkerHandler>[1];

/** Activity slots per invocation: a run's parallel tool calls plus its LLM turn. */
const LAMBDA_MAX_CONCURRENT_ACTIVITIES = 8;

/** The Lambda worker's variables beside the worker's (WORKER_ENV). */
export const LAMBDA_WORKER_ENV = {
  KEEL_WORKER_DEPLOYMENT_NAME: z
    .string()
    .min(1)
    .describe("Lambda worker: the Temporal worker deployment's name (set by the CDK stack)."),
  KEEL_WORKER_BUILD_ID: z
    .string()
    .min(1)
    .describe("Lambda worker: the build id of this worker deployment version (set by the CDK stack)."),
} satisfies SettingsShape;

/** The `runWorker` handler, the MCP connections its activities open, telemetry when on. */
interface Environment {
  run: LambdaWorkerHandler;
  mcp: McpConnections;
  telemetry: Telemetry | undefined;
}

/** Resolves secrets, validates configuration and builds the `runWorker` handler: once per environment. */
async function createHandler(): Promise<Environment> {
  // The one read of this process's environment: everything below gets its settings from here.
  await resolveSecretEnv(process.env);
  const config = workerConfigFromEnv(process.env);
  const deployment = parseSettings(LAMBDA_WORKER_ENV, process.env, "Lambda worker");
  for (const line of describeUnknownSettings(unknownSettings(process.env))) log("warn", line, {});
  const telemetrySettings = config.telemetry;
  const workflowBundlePath = workflowBundleOf(config, telemetrySettings !== undefined);
  if (!workflowBundlePath) throw new Error("KEEL_WORKFLOW_BUNDLE is required on Lambda");
  // Before the activities: they wrap the model provider only when telemetry is on.
  const telemetry = telemetrySettings ? startTelemetry(telemetrySettings) : undefined;
  try {
    const s3 = createS3Client(config.s3);
    // No per-invocation queue can outlive the invocation: tool calls use the shared queue.
    const mcp = workerMcpConnections(config);
    const activities = workerActivities(config, s3, config.taskQueue, mcp);
    log("info", "lambda worker configured", {
      taskQueue: config.taskQueue,
      namespace: config.temporal.namespace,
      deploymentName: deployment.KEEL_WORKER_DEPLOYMENT_NAME,
      buildId: deployment.KEEL_WORKER_BUILD_ID,
      // On or off only: an endpoint URL may carry credentials.
      telemetry: telemetry ? "on" : "off",
    });
    const run = runWorker(
      { deploymentName: deployment.KEEL_WORKER_DEPLOYMENT_NAME, buildId: deployment.KEEL_WORKER_BUILD_ID },
      (lambdaConfig) => {
        lambdaConfig.namespace = config.temporal.namespace;
        if (telemetrySettings) {
          lambdaConfig.runtimeOptions.telemetryOptions = {
            ...lambdaConfig.runtimeOptions.telemetryOptions,
            metrics: temporalMetricsExporter(telemetrySettings),
          };
        }
        lambdaConfig.connectionOptions = {
          address: config.temporal.address,
          ...(config.temporal.apiKey ? { tls: true, apiKey: config.temporal.apiKey } : {}),
        };
        Object.assign(lambdaConfig.workerOptions, {
          taskQueue: config.taskQueue,
          workflowBundle: { codePath: workflowBundlePath },
          activities,
          ...commonWorkerOptions(config, s3),
          ...workerTelemetryOptions(telemetry),
          maxConcurrentActivityTaskExecutions: LAMBDA_MAX_CONCURRENT_ACTIVITIES,
          // Agent runs last long and continue as new: they follow the current version, and workflow
          // changes ship with patches proven by replay tests (docs/deploy.md).
          workerDeploymentOptions: { defaultVersioningBehavior: "AUTO_UPGRADE" },
        });
      },
    );
    return { run, mcp, telemetry };
  } catch (error) {
    // The next invocation starts telemetry again: the global providers may be registered once.
    await telemetry?.shutdown();
    throw error;
  }
}

let initialization: Promise<Environment> | undefined;

/**
 * The Lambda entry point. A failed initialization is retried by the next invocation. Returns once
 * the MCP connections are closed and (telemetry on) the invocation's spans and metrics exported.
 */
export async function handler(event: unknown, context: LambdaContext): Promise<void> {
  initialization ??= createHandler().catch((error: unknown) => {
    initialization = undefined;
    log("error", "lambda worker failed to start", {
      error: error instanceof Error ? error.message : String(error),
    });
    throw error;
  });
  const { run, mcp, telemetry } = await initialization;
  await flushedInvocation(
    telemetry,
    () => context.getRemainingTimeInMillis(),
    async () => {
      try {
        await run(event, context);
      } finally {
        await mcp.closeAll();
      }
    },
  );
}
