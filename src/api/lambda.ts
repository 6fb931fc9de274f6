/**
 * AWS Lambda entry for API Gateway HTTP API (payload format 2.0). Hono's adapter decodes base64
 * bodies, joins `cookies` into a Cookie header and returns binary bodies base64-encoded.
 * Configuration is read and the app built on the first invocation, then kept for the container's
 * life; the Temporal connection is lazy and re-created after a failure (see temporal.ts).
 */
import { handle } from "hono/aws-lambda";
import { resolveSecretEnv } from "../worker/secrets";
import { apiConfigFromEnv } from "./config";
import { createApiRuntime } from "./runtime";

type LambdaHandler = ReturnType<typeof handle>;

let cached: Promise<LambdaHandler> | undefined;

/** Secrets (`*_SECRET_ARN`) are resolved once, before the configuration is read. */
async function createHandler(): Promise<LambdaHandler> {
  await resolveSecretEnv();
  return handle(createApiRuntime(apiConfigFromEnv()).app);
}

export const handler = async (
  ...args: Parameters<LambdaHandler>
): Promise<Awaited<ReturnType<LambdaHandler>>> => {
  cached ??= createHandler().catch((error: unknown) => {
    cached = undefined;
    throw error;
  });
  return (await cached)(...args);
};
