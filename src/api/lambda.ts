/**
 * AWS Lambda entry for API Gateway HTTP API (payload format 2.0). Hono's adapter decodes base64
 * bodies, joins `cookies` into a Cookie header and returns binary bodies base64-encoded.
 * Configuration is read and the app built on the first invocation, then kept for the container's
 * life; the Temporal connection is lazy and re-created after a failure (see temporal.ts). With
 * KEEL_OTEL_ENDPOINT each response waits until the request's spans and the metrics are exported
 * (`flushedInvocation`): the environment is frozen once it returns.
 */
import { handle } from "hono/aws-lambda";
import { describeUnknownSettings, unknownSettings } from "../core/env-settings";
import { flushedInvocation } from "../telemetry/lambda";
import type { Telemetry } from "../telemetry/sdk";
import { resolveSecretEnv } from "../worker/secrets";
import { apiConfigFromEnv } from "./config";
import { createApiRuntime } from "./runtime";

type LambdaHandler = ReturnType<typeof handle>;

interface Environment {
  handle: LambdaHandler;
  telemetry: Telemetry | undefined;
}

let cached: Promise<Environment> | undefined;

/** Secrets (`*_SECRET_ARN`) are resolved once, before the configuration is read. */
async function createHandler(): Promise<Environment> {
  // The one read of this process's environment: everything below gets its settings from here.
  await resolveSecretEnv(process.env);
  const config = apiConfigFromEnv(process.env);
  for (const line of describeUnknownSettings(unknownSettings(process.env)))
    process.stderr.write(`${JSON.stringify({ level: "warn", msg: line })}\n`);
  const runtime = createApiRuntime(config);
  return { handle: handle(runtime.app), telemetry: runtime.telemetry };
}

export const handler = async (
  ...args: Parameters<LambdaHandler>
): Promise<Awaited<ReturnType<LambdaHandler>>> => {
  cached ??= createHandler().catch((error: unknown) => {
    cached = undefined;
    throw error;
  });
  const { handle: run, telemetry } = await cached;
  const [, lambdaContext] = args;
  return flushedInvocation(telemetry, lambdaContext && (() => lambdaContext.getRemainingTimeInMillis()), () =>
    run(...args),
  );
};
