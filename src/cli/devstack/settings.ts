/**
 * The variables `keel dev` reads itself. Beside its own, it reads where an existing Temporal or
 * S3 server is (then it starts none), the provider keys and the settings it hands to the API and
 * the worker it starts; every other worker setting set where it starts is passed on
 * (worker-env.ts).
 */
import { z } from "zod";
import type { SettingsShape } from "../../core/env-settings";
import { TEMPORAL_ENV } from "../../core/temporal-settings";
import { PROVIDER_ENV } from "../../providers/settings";
import { S3_ENV } from "../../store/s3-config";
import { TELEMETRY_ENV } from "../../telemetry/settings";

export const DEV_ENV = {
  KEEL_DATA_DIR: z
    .string()
    .optional()
    .describe("keel dev: where the local stack keeps its state across restarts (default .keel/data)."),
  KEEL_TEMPORAL_BIN: z
    .string()
    .optional()
    .describe("keel dev, tests: the Temporal CLI to run (default the one installed in .keel/tools)."),
  KEEL_TEMPORAL_TEST_SERVER_BIN: z
    .string()
    .optional()
    .describe("Tests: Temporal's time-skipping test server (default the one installed in .keel/tools)."),
  KEEL_WEED_BIN: z
    .string()
    .optional()
    .describe("keel dev, tests: SeaweedFS's weed (default the one installed in .keel/tools)."),
  KEEL_JAEGER_BIN: z
    .string()
    .optional()
    .describe("keel dev --traces, tests: Jaeger (default the one built into .keel/tools/jaeger)."),
  KEEL_TEMPORAL_ADDRESS: TEMPORAL_ENV.KEEL_TEMPORAL_ADDRESS,
  KEEL_TEMPORAL_NAMESPACE: TEMPORAL_ENV.KEEL_TEMPORAL_NAMESPACE,
  KEEL_TASK_QUEUE: TEMPORAL_ENV.KEEL_TASK_QUEUE,
  ...S3_ENV,
  ...PROVIDER_ENV,
  KEEL_OTEL_ENDPOINT: TELEMETRY_ENV.KEEL_OTEL_ENDPOINT,
  KEEL_OTEL_CAPTURE_CONTENT: TELEMETRY_ENV.KEEL_OTEL_CAPTURE_CONTENT,
} satisfies SettingsShape;
