/**
 * The deployment's configuration: one JSON file (see `infra/config/example.json`), validated once
 * when the app starts. Secrets never appear here, only the ARNs of Secrets Manager secrets.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";

/** CloudWatch Logs accepts only these retention periods (days). */
const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
] as const;

/** Lambda's hard limit; tool activities may run this long (start-to-close 15 minutes). */
export const LAMBDA_MAX_TIMEOUT_MINUTES = 15;

const secretArn = z
  .string()
  .regex(
    /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+$/,
    "a Secrets Manager ARN",
  );

const iamPrincipalArn = z
  .string()
  .regex(/^arn:aws[a-z-]*:(iam|sts)::\d{12}:[A-Za-z0-9/_+=,.@:-]+$/, "an IAM ARN");

/** What both ECS modes share: service size, autoscaling, the worker's concurrency and drain window. */
const ecsServiceFields = {
  minCount: z.number().int().min(1).default(1),
  maxCount: z.number().int().min(1).default(4),
  targetCpuPercent: z.number().int().min(10).max(90).default(60),
  maxConcurrentActivities: z.number().int().positive().default(50),
  /** Seconds ECS waits after SIGTERM before SIGKILL: the drain window for in-flight activities. */
  stopTimeoutSeconds: z.number().int().min(2).max(120).default(120),
};

/**
 * The default and the mode for several tenants: ECS tasks on EC2 instances of an Auto Scaling
 * group (ECS-optimized Amazon Linux 2023, arm64), where the tool sandbox (bubblewrap) runs.
 */
const Ec2WorkersSchema = z.object({
  mode: z.literal("ec2"),
  /** An arm64 (Graviton) instance type: the worker image is built for linux/arm64. */
  instanceType: z
    .string()
    .regex(/^[a-z]+\d+g[a-z0-9-]*\.[a-z0-9]+$/, "an arm64 (Graviton) instance type, e.g. m7g.large")
    .default("m7g.large"),
  minInstances: z.number().int().min(1).default(1),
  maxInstances: z.number().int().min(1).default(4),
  /** CPU units and memory reserved for each worker task on its instance. */
  cpu: z.number().int().min(256).max(16_384).default(1024),
  memoryMiB: z.number().int().min(512).max(122_880).default(2048),
  /** Encrypted gp3 root volume of each instance: it holds the images and the workspaces of its tasks. */
  rootVolumeGiB: z.number().int().min(30).max(16_384).default(100),
  ...ecsServiceFields,
});

/** ECS on Fargate: no user namespaces, so no tool sandbox; only for a declared `singleTenant`. */
const FargateWorkersSchema = z.object({
  mode: z.literal("fargate"),
  /** Fargate CPU units and memory; 1024 / 2048 fits a few dozen concurrent runs. */
  cpu: z
    .union([z.literal(256), z.literal(512), z.literal(1024), z.literal(2048), z.literal(4096)])
    .default(1024),
  memoryMiB: z.number().int().min(512).max(30_720).default(2048),
  /** Fargate task storage that holds the session workspaces (21–200 GiB). */
  workspaceStorageGiB: z.number().int().min(21).max(200).default(40),
  ...ecsServiceFields,
});

const LambdaWorkersSchema = z.object({
  /** Temporal serverless workers: no user namespaces, so no tool sandbox; only for a declared `singleTenant`. */
  mode: z.literal("lambda"),
  /** Worker deployment name and build id: the version Temporal routes tasks to. */
  deploymentName: z.string().min(1).default("keel"),
  buildId: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "letters, digits, . _ -"),
  memoryMiB: z.number().int().min(512).max(10_240).default(2048),
  /** /tmp size: the per-instance session workspaces live here. */
  ephemeralStorageMiB: z.number().int().min(512).max(10_240).default(4096),
  reservedConcurrency: z.number().int().positive().optional(),
  /** The principal Temporal assumes the invoke role from (Temporal Cloud's, or your server's role). */
  temporalPrincipalArn: iamPrincipalArn,
  externalId: z.string().regex(/^[A-Za-z0-9_+=,.@-]{5,45}$/, "5–45 characters of [A-Za-z0-9_+=,.@-]"),
});

/**
 * Launched environments on Fargate: the workers start one ECS Fargate task per session running
 * `keel runner` (src/environments/launchers/fargate.ts, infra/lib/runners.ts).
 */
const LaunchedEnvironmentsSchema = z.object({
  /** Fargate CPU units and memory of each runner task. */
  cpu: z
    .union([z.literal(256), z.literal(512), z.literal(1024), z.literal(2048), z.literal(4096)])
    .default(1024),
  memoryMiB: z.number().int().min(512).max(30_720).default(2048),
  /** Task storage holding the session's workspace (21–200 GiB). */
  ephemeralStorageGiB: z.number().int().min(21).max(200).default(21),
  /** A runner with no call for this long stops (KEEL_LAUNCHER_IDLE_SECONDS). */
  idleSeconds: z.number().int().positive().default(300),
});

const WorkersSchema = z.discriminatedUnion("mode", [
  Ec2WorkersSchema,
  FargateWorkersSchema,
  LambdaWorkersSchema,
]);

/** Worker modes whose hosts cannot create user namespaces: tools run there without the sandbox. */
export const UNSANDBOXED_MODES: ReadonlySet<string> = new Set(["fargate", "lambda"]);

const KeelInfraConfigSchema = z.object({
  /** Short name used in resource names: "dev", "prod". */
  environment: z.string().regex(/^[a-z][a-z0-9-]{1,19}$/),
  /** Production keeps the bucket and log groups when the stack is deleted. */
  production: z.boolean().default(false),
  account: z.string().regex(/^\d{12}$/),
  region: z.string().regex(/^[a-z]{2}(-gov)?-[a-z]+-\d$/),
  temporal: z.object({
    address: z.string().min(1),
    namespace: z.string().min(1),
    taskQueue: z.string().min(1).default("keel"),
    /** Temporal Cloud API key; unset for a cluster reachable without one. */
    apiKeySecretArn: secretArn.optional(),
  }),
  providers: z
    .object({
      openaiApiKeySecretArn: secretArn.optional(),
      anthropicApiKeySecretArn: secretArn.optional(),
      openaiBaseUrl: z.url().optional(),
      anthropicBaseUrl: z.url().optional(),
    })
    .prefault({}),
  storage: z
    .object({
      /** Generated when unset. */
      bucketName: z
        .string()
        .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/)
        .optional(),
      prefix: z
        .string()
        .regex(/^([A-Za-z0-9_-]+\/)*$/, "empty or segments ending in /")
        .default("keel/"),
      /** A customer-managed KMS key; S3-managed encryption when unset. */
      kmsKeyArn: z
        .string()
        .regex(/^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key\/[A-Za-z0-9-]+$/)
        .optional(),
      versioned: z.boolean().default(true),
      /**
       * Session objects (entries and their immutable chunk copies) move to Intelligent-Tiering after
       * this many days. Lifecycle filters match key prefixes, not `…/chunks/` patterns, and chunks are
       * the fast path of cold reads, so they are tiered with their session rather than expired.
       */
      sessionTieringDays: z.number().int().min(0).default(30),
      /** Large Temporal payloads stored under `{prefix}payloads/` expire after this many days. */
      payloadExpirationDays: z.number().int().positive().default(90),
      noncurrentVersionExpirationDays: z.number().int().positive().default(30),
    })
    .prefault({}),
  api: z
    .object({
      /** The API's Lambda entry, relative to the repository root. */
      entry: z.string().default("src/api/lambda.ts"),
      /** Secret whose value is KEEL_API_KEYS (hashed bearer keys mapped to tenants). */
      apiKeysSecretArn: secretArn.optional(),
      /** KEEL_ADMIN_KEY_SHA256: sha256 hex digests of the operator's admin keys (a digest, not a secret). */
      adminKeySha256: z
        .array(z.string().regex(/^[0-9a-f]{64}$/, "the lowercase sha256 hex digest of an admin key"))
        .optional(),
      memoryMiB: z.number().int().min(128).max(10_240).default(1024),
      timeoutSeconds: z.number().int().min(3).max(29).default(29),
      throttle: z
        .object({
          rateLimit: z.number().positive().default(50),
          burstLimit: z.number().int().positive().default(100),
        })
        .prefault({}),
      domain: z.object({ name: z.string().min(3), certificateArn: z.string().startsWith("arn:") }).optional(),
    })
    .prefault({}),
  /**
   * The one tenant this deployment serves. Required by the modes without a tool sandbox (fargate,
   * lambda): their workers run with KEEL_SANDBOX=off, where a tool command reads the worker's
   * secrets and every workspace on it, so the API and the workers refuse every other tenant.
   */
  singleTenant: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/, "a tenant id")
    .optional(),
  /**
   * false: the workers run no tool call (KEEL_WORKER_TOOLS=off on the API and the workers): every
   * run names a runner or launched environment, and the API refuses any other. Such workers run no
   * agent code, so the modes without a tool sandbox need no `singleTenant`.
   */
  workerTools: z.boolean().default(true),
  workers: WorkersSchema.prefault({ mode: "ec2" }),
  /** Set: the ECS workers launch a Fargate task per session for `launched` environments. */
  launchedEnvironments: LaunchedEnvironmentsSchema.optional(),
  network: z
    .object({
      maxAzs: z.number().int().min(1).max(3).default(2),
      /** Explicit zones avoid an AWS lookup at synth time (needed for offline `cdk synth`). */
      availabilityZones: z
        .array(z.string().regex(/^[a-z]{2}(-gov)?-[a-z]+-\d[a-z]$/))
        .min(1)
        .max(3)
        .optional(),
      /** 0: tasks run in public subnets with public IPs (cheaper); otherwise private subnets behind NAT. */
      natGateways: z.number().int().min(0).max(3).default(1),
    })
    .prefault({}),
  observability: z
    .object({
      logRetentionDays: z
        .number()
        .int()
        .refine((days) => (LOG_RETENTION_DAYS as readonly number[]).includes(days), {
          message: `one of ${LOG_RETENTION_DAYS.join(", ")}`,
        })
        .default(30),
      /** Alarm notifications go to this address (an SNS subscription to confirm) when set. */
      alarmEmail: z.email().optional(),
      /**
       * An OTLP/HTTP receiver's base URL: the API and the workers send traces and metrics there
       * (KEEL_OTEL_ENDPOINT). It must be reachable from both (the workers' VPC, the API function).
       */
      otelEndpoint: z.url({ protocol: /^https?$/, error: "an http(s) URL (OTLP over HTTP)" }).optional(),
      /** Prompt and completion text in model spans (KEEL_OTEL_CAPTURE_CONTENT); off by default. */
      otelCaptureContent: z.boolean().default(false),
    })
    .prefault({}),
});

export type KeelInfraConfig = z.infer<typeof KeelInfraConfigSchema>;
export type Ec2WorkersConfig = z.infer<typeof Ec2WorkersSchema>;
export type FargateWorkersConfig = z.infer<typeof FargateWorkersSchema>;
export type EcsWorkersConfig = Ec2WorkersConfig | FargateWorkersConfig;
export type LambdaWorkersConfig = z.infer<typeof LambdaWorkersSchema>;
export type LaunchedEnvironmentsConfig = z.infer<typeof LaunchedEnvironmentsSchema>;

/** Validates a parsed config; throws one error listing every problem with its path. */
export function parseInfraConfig(raw: unknown): KeelInfraConfig {
  const parsed = KeelInfraConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`,
    );
    throw new Error(`Invalid Keel infrastructure config:\n  ${problems.join("\n  ")}`);
  }
  const config = parsed.data;
  const { workers } = config;
  if (workers.mode !== "lambda" && workers.minCount > workers.maxCount) {
    throw new Error("Invalid Keel infrastructure config:\n  workers: minCount exceeds maxCount");
  }
  if (workers.mode === "ec2" && workers.minInstances > workers.maxInstances) {
    throw new Error("Invalid Keel infrastructure config:\n  workers: minInstances exceeds maxInstances");
  }
  if (workers.mode === "ec2" && config.network.natGateways === 0) {
    throw new Error(
      'Invalid Keel infrastructure config:\n  network.natGateways: workers.mode "ec2" needs at least 1 (ECS tasks on EC2 get no public IP, so they reach Temporal and the providers through NAT)',
    );
  }
  if (workers.mode === "lambda" && config.launchedEnvironments !== undefined) {
    throw new Error(
      'Invalid Keel infrastructure config:\n  launchedEnvironments: needs workers.mode "ec2" or "fargate" (the Lambda workers have no VPC or cluster to start runner tasks in)',
    );
  }
  if (UNSANDBOXED_MODES.has(workers.mode) && config.singleTenant === undefined && config.workerTools) {
    throw new Error(
      `Invalid Keel infrastructure config:\n  singleTenant: required with workers.mode "${workers.mode}", which runs tools without the sandbox (a tool command there reads the worker's secrets and every workspace on it); name the one tenant it serves, set workerTools: false (every run's tools in a runner or launched environment), or use workers.mode "ec2"`,
    );
  }
  return config;
}

/** Reads and validates a JSON config file. */
export function loadInfraConfig(path: string): KeelInfraConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new Error(`Cannot read Keel infrastructure config ${path}: ${(error as Error).message}`);
  }
  return parseInfraConfig(raw);
}
