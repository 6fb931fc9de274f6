/**
 * The API's Lambda handler (`src/api/lambda.ts`) with KEEL_OTEL_ENDPOINT, against a real receiver
 * (Jaeger): a request's span is in Jaeger as soon as the handler returned the response. Batched
 * exports are set to wait ten minutes here (`OTEL_BSP_SCHEDULE_DELAY`), so only the handler's
 * flush can have sent it: a frozen Lambda environment would hold it until its next invocation.
 */
import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { handler } from "../../../src/api/lambda";
import {
  ensureJaeger,
  JAEGER_BUILD_TIMEOUT_MS,
  type JaegerServer,
  startJaeger,
} from "../../../src/cli/devstack/jaeger-server";
import { temporalAddress, temporalNamespace, testTmpDir, uniqueName } from "../../support/integration-env";
import { eventually } from "../../support/run-harness";

jest.setTimeout(120_000);

/** What the receiver itself takes to store what it got (Jaeger batches for 200 ms). */
const RECEIVER_MS = 3_000;

let jaeger: JaegerServer;

// The handler reads its configuration on the first invocation: this is the environment it sees.
// Jaeger is built the first time a tracing test needs it (`npm run ensure` leaves it out).
beforeAll(() => ensureJaeger(process.env), JAEGER_BUILD_TIMEOUT_MS);

beforeAll(async () => {
  const dir = join(testTmpDir(), uniqueName("jaeger-lambda-api"));
  mkdirSync(dir, { recursive: true });
  jaeger = await startJaeger({ dataDir: dir });
  Object.assign(process.env, {
    KEEL_TEMPORAL_ADDRESS: temporalAddress(),
    KEEL_TEMPORAL_NAMESPACE: temporalNamespace(),
    KEEL_API_KEYS: JSON.stringify({ [createHash("sha256").update("unused-key").digest("hex")]: "tenant-a" }),
    KEEL_OTEL_ENDPOINT: jaeger.otlpEndpoint,
    KEEL_OTEL_METRICS_INTERVAL_MS: "600000",
    OTEL_BSP_SCHEDULE_DELAY: "600000",
  });
});

afterAll(async () => {
  await jaeger?.process.stop();
});

test("a request's span is at the receiver when the Lambda handler returned its response", async () => {
  const response = await handler(
    {
      version: "2.0",
      routeKey: "$default",
      rawPath: "/healthz",
      rawQueryString: "",
      headers: { host: "abc123.execute-api.eu-west-1.amazonaws.com" },
      requestContext: {
        accountId: "123456789012",
        apiId: "abc123",
        domainName: "abc123.execute-api.eu-west-1.amazonaws.com",
        domainPrefix: "abc123",
        http: {
          method: "GET",
          path: "/healthz",
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
      isBase64Encoded: false,
    } as unknown as Parameters<typeof handler>[0],
    { getRemainingTimeInMillis: () => 30_000 } as unknown as Parameters<typeof handler>[1],
  );
  expect(response).toMatchObject({ statusCode: 200 });
  const names = await eventually(
    async () => {
      const response = await fetch(`${jaeger.uiUrl}/api/traces?service=keel-api`);
      const traces = ((await response.json()) as { data: { spans: { operationName: string }[] }[] }).data;
      const names = traces.flatMap((found) => found.spans.map((span) => span.operationName));
      return names.length > 0 ? names : undefined;
    },
    RECEIVER_MS,
    "the request's span in Jaeger right after the handler returned",
  );
  expect(names).toContain("GET /healthz");
});
