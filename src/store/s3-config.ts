/**
 * The one place the S3 client is configured. Everything that talks to S3 (session store, tests,
 * local stack, payload storage) builds its client here, so AWS S3 and S3-compatible servers are
 * configured the same way everywhere.
 */
import { S3Client } from "@aws-sdk/client-s3";
import { z } from "zod";
import type { SettingsShape } from "../core/env-settings";

const S3SettingsSchema = z.object({
  bucket: z.string().min(3),
  /** Key prefix under which Keel keeps everything, e.g. "keel/". */
  prefix: z.string().default(""),
  region: z.string().default("us-east-1"),
  /** Custom endpoint for S3-compatible servers; unset for AWS S3. */
  endpoint: z.url().optional(),
  /** Path-style addressing (bucket in the path), needed by most S3-compatible servers. */
  forcePathStyle: z.boolean().default(false),
  /** Static credentials; when unset the AWS default provider chain is used (roles, env, profile). */
  accessKeyId: z.string().optional(),
  secretAccessKey: z.string().optional(),
  /**
   * "when_required" sends checksums only where S3 requires them; S3-compatible servers that do not
   * know the SDK's default CRC checksums need it. "when_supported" is the SDK default (AWS S3).
   */
  checksums: z.enum(["when_required", "when_supported"]).default("when_supported"),
});
export type S3Settings = z.infer<typeof S3SettingsSchema>;

/** The KEEL_S3_* variables, as fields of a process's settings schema. */
export const S3_ENV = {
  KEEL_S3_BUCKET: z
    .string()
    .optional()
    .describe("The bucket sessions, workspaces and Keel's records are kept in (required)."),
  KEEL_S3_PREFIX: z
    .string()
    .optional()
    .describe('Key prefix under which Keel keeps everything, e.g. "keel/".'),
  KEEL_S3_REGION: z.string().optional().describe("The bucket's region (else AWS_REGION, else us-east-1)."),
  AWS_REGION: z
    .string()
    .optional()
    .describe("The AWS region (set by AWS runtimes); the S3 region when KEEL_S3_REGION is unset."),
  KEEL_S3_ENDPOINT: z.url().optional().describe("An S3-compatible server's URL; unset for AWS S3."),
  KEEL_S3_FORCE_PATH_STYLE: z
    .enum(["true", "false"])
    .optional()
    .describe("true: path-style addressing (bucket in the path), which most S3-compatible servers need."),
  KEEL_S3_ACCESS_KEY_ID: z
    .string()
    .optional()
    .describe(
      "Static credentials (secret); unset: the AWS default provider chain (roles, environment, profile).",
    ),
  KEEL_S3_SECRET_ACCESS_KEY: z.string().optional().describe("Static credentials' secret key (secret)."),
  KEEL_S3_CHECKSUMS: z
    .enum(["when_required", "when_supported"])
    .optional()
    .describe(
      '"when_required" sends checksums only where S3 requires them (S3-compatible servers that do not know the SDK\'s CRC checksums); "when_supported" (default) is the SDK\'s.',
    ),
} satisfies SettingsShape;

/** S3 settings from parsed `S3_ENV` values; throws a readable error when they are invalid. */
export function s3SettingsFromEnv(env: NodeJS.ProcessEnv): S3Settings {
  const parsed = S3SettingsSchema.safeParse({
    bucket: env.KEEL_S3_BUCKET,
    prefix: env.KEEL_S3_PREFIX,
    region: env.KEEL_S3_REGION ?? env.AWS_REGION,
    endpoint: env.KEEL_S3_ENDPOINT || undefined,
    forcePathStyle:
      env.KEEL_S3_FORCE_PATH_STYLE === undefined ? undefined : env.KEEL_S3_FORCE_PATH_STYLE === "true",
    accessKeyId: env.KEEL_S3_ACCESS_KEY_ID,
    secretAccessKey: env.KEEL_S3_SECRET_ACCESS_KEY,
    checksums: env.KEEL_S3_CHECKSUMS,
  });
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((issue) => `${issue.path.join(".")}: ${issue.message}`)
      .join("; ");
    throw new Error(`Invalid S3 settings (KEEL_S3_*): ${problems}`);
  }
  return parsed.data;
}

/** Settings as environment variables, for handing to a child process (worker, API). */
export function s3SettingsToEnv(settings: S3Settings): Record<string, string> {
  const env: Record<string, string> = {
    KEEL_S3_BUCKET: settings.bucket,
    KEEL_S3_PREFIX: settings.prefix,
    KEEL_S3_REGION: settings.region,
    KEEL_S3_FORCE_PATH_STYLE: String(settings.forcePathStyle),
    KEEL_S3_CHECKSUMS: settings.checksums,
  };
  if (settings.endpoint) env.KEEL_S3_ENDPOINT = settings.endpoint;
  if (settings.accessKeyId) env.KEEL_S3_ACCESS_KEY_ID = settings.accessKeyId;
  if (settings.secretAccessKey) env.KEEL_S3_SECRET_ACCESS_KEY = settings.secretAccessKey;
  return env;
}

export function createS3Client(settings: S3Settings): S3Client {
  // Keel supports Node 20 deliberately (see README); the SDK's upgrade notice would only add noise.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
  const checksum = settings.checksums === "when_required" ? "WHEN_REQUIRED" : "WHEN_SUPPORTED";
  return new S3Client({
    region: settings.region,
    endpoint: settings.endpoint,
    forcePathStyle: settings.forcePathStyle,
    credentials:
      settings.accessKeyId && settings.secretAccessKey
        ? { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey }
        : undefined,
    requestChecksumCalculation: checksum,
    responseChecksumValidation: checksum,
    // Retries with backoff for throttling and 5xx; callers add their own for conditional-write races.
    maxAttempts: 5,
    // Each command type's middleware chain is built once, not at every request (about a quarter
    // of a request's CPU here). Middleware added to the client after its first request of a
    // command type does not apply to that type.
    cacheMiddleware: true,
  });
}
