/**
 * AWS Lambda entry for API Gateway HTTP API (payload format 2.0). Hono's adapter decodes base64
 * bodies, joins `cookies` into a Cookie header and returns binary bodies base64-encoded.
 * Configuration is read and the app built on the first invocation, then kept for the container's
 * life; the Temporal connection is lazy and re-created after a failure (see temporal.ts).
 */
import { handle } from "hono/aws-lambda";
import { apiConfigFromEnv } from "./config";
import { createApiRuntime } from "./runtime";

type LambdaHandler = ReturnType<typeof handle>;

let cached: LambdaHandler | undefined;

export const handler: LambdaHandler = (event, context) => {
  cached ??= handle(createApiRuntime(apiConfigFromEnv()).app);
  return cached(event, context);
};
