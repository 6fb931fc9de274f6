/**
 * API Gateway HTTP API (payload v2) events for the real Lambda handler (src/api/lambda.ts), which
 * reads its configuration from the environment on its first invocation: a test sets that first.
 */
import { createHash } from "node:crypto";
import { handler } from "../../../src/api/lambda";
import { temporalAddress, temporalNamespace } from "../../support/integration-env";
import type { ApiStage } from "./api-stage";

/**
 * The environment the handler reads on its first invocation, as a deployment's: the stage's
 * Temporal and task queue, and its two tenants' keys.
 */
export function configureLambda(api: ApiStage): void {
  const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
  Object.assign(process.env, {
    KEEL_TEMPORAL_ADDRESS: temporalAddress(),
    KEEL_TEMPORAL_NAMESPACE: temporalNamespace(),
    KEEL_TASK_QUEUE: api.stage.taskQueue,
    KEEL_API_KEYS: JSON.stringify({
      [sha256(api.keys.a)]: api.tenants.a,
      [sha256(api.keys.b)]: api.tenants.b,
    }),
    KEEL_API_BODY_LIMIT_BYTES: String(256 * 1024),
  });
}

export interface V2Options {
  method: string;
  path: string;
  query?: string;
  headers?: Record<string, string>;
  body?: string;
  base64?: boolean;
  cookies?: string[];
}

/** An API Gateway HTTP API payload v2 event as the gateway sends it. */
function v2Event(options: V2Options) {
  const headers = { host: "abc123.execute-api.eu-west-1.amazonaws.com", ...options.headers };
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath: options.path,
    rawQueryString: options.query ?? "",
    ...(options.cookies ? { cookies: options.cookies } : {}),
    headers,
    requestContext: {
      accountId: "123456789012",
      apiId: "abc123",
      domainName: headers.host,
      domainPrefix: "abc123",
      http: {
        method: options.method,
        path: options.path,
        protocol: "HTTP/1.1",
        sourceIp: "203.0.113.7",
        userAgent: "test",
      },
      requestId: "req-1",
      routeKey: "$default",
      stage: "$default",
      time: "01/Jan/2026:00:00:00 +0000",
      timeEpoch: 1_767_225_600_000,
    },
    ...(options.body !== undefined
      ? {
          body: options.base64 ? Buffer.from(options.body).toString("base64") : options.body,
          isBase64Encoded: options.base64 ?? false,
        }
      : { isBase64Encoded: false }),
  };
}

/** The Lambda handler's answer to `options` as an API Gateway v2 event, its body decoded. */
export async function invoke(options: V2Options) {
  // biome-ignore lint/suspicious/noExplicitAny: the adapter's event union is wider than this test's v2 events
  const result = await handler(v2Event(options) as any, {} as any);
  const body = result.isBase64Encoded ? Buffer.from(result.body, "base64").toString("utf8") : result.body;
  return { status: result.statusCode, headers: result.headers ?? {}, body };
}
