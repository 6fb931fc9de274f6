import { parseInfraConfig } from "../../../infra/lib/config";
import { sandboxEnvironment, telemetryEnvironment, tenancyEnvironment } from "../../../infra/lib/runtime";
import { exampleConfig } from "./synth";

test("the example configs are valid and fill in defaults", () => {
  const ec2 = exampleConfig("example.json");
  expect(ec2.workers).toMatchObject({ mode: "ec2", instanceType: "m7g.large", rootVolumeGiB: 100 });
  expect(ec2.singleTenant).toBeUndefined();
  expect(exampleConfig("example-fargate.json")).toMatchObject({
    singleTenant: "acme",
    workers: { mode: "fargate", workspaceStorageGiB: 40 },
  });
  const lambda = exampleConfig("example-lambda.json");
  expect(lambda.workers).toMatchObject({ mode: "lambda", deploymentName: "keel", ephemeralStorageMiB: 4096 });
  expect(lambda.singleTenant).toBe("acme");
  expect(lambda.network).toEqual({ maxAzs: 2, natGateways: 1 });
});

test("a minimal config gets sandboxed ECS workers on EC2, S3-managed storage under keel/ and 30-day logs", () => {
  const config = parseInfraConfig({
    environment: "dev",
    account: "123456789012",
    region: "eu-west-1",
    temporal: { address: "temporal.internal:7233", namespace: "default" },
  });
  expect(config.workers).toMatchObject({
    mode: "ec2",
    instanceType: "m7g.large",
    minInstances: 1,
    minCount: 1,
    maxCount: 4,
    stopTimeoutSeconds: 120,
  });
  expect(config.singleTenant).toBeUndefined();
  expect(config.storage).toMatchObject({ prefix: "keel/", versioned: true });
  expect(config.storage.kmsKeyArn).toBeUndefined();
  expect(config.api.throttle).toEqual({ rateLimit: 50, burstLimit: 100 });
  expect(config.observability.logRetentionDays).toBe(30);
});

test("every problem is reported with its path", () => {
  const attempt = () =>
    parseInfraConfig({
      environment: "Prod!",
      account: "1234",
      region: "us-east-1",
      temporal: { address: "x:7233", namespace: "n", apiKeySecretArn: "not-an-arn" },
      workers: {
        mode: "lambda",
        buildId: "v 1",
        temporalPrincipalArn: "arn:aws:iam::111122223333:root",
        externalId: "x",
      },
      observability: { logRetentionDays: 31 },
    });
  expect(attempt).toThrow(/environment:/);
  expect(attempt).toThrow(/account:/);
  expect(attempt).toThrow(/temporal\.apiKeySecretArn: a Secrets Manager ARN/);
  expect(attempt).toThrow(/workers\.buildId:/);
  expect(attempt).toThrow(/workers\.externalId:/);
  expect(attempt).toThrow(/observability\.logRetentionDays: one of 1, 3, 5/);
});

test("minimum worker count above the maximum is refused", () => {
  const config = { ...exampleConfig("example.json") } as Record<string, unknown>;
  expect(() => parseInfraConfig({ ...config, workers: { mode: "ec2", minCount: 5, maxCount: 2 } })).toThrow(
    /minCount exceeds maxCount/,
  );
  expect(() =>
    parseInfraConfig({ ...config, workers: { mode: "ec2", minInstances: 3, maxInstances: 2 } }),
  ).toThrow(/minInstances exceeds maxInstances/);
});

test("the modes without a tool sandbox need the one tenant they serve", () => {
  const fargate = { ...exampleConfig("example-fargate.json") } as Record<string, unknown>;
  const lambda = { ...exampleConfig("example-lambda.json") } as Record<string, unknown>;
  for (const config of [fargate, lambda]) {
    expect(() => parseInfraConfig({ ...config, singleTenant: undefined })).toThrow(
      /singleTenant: required with workers\.mode "(fargate|lambda)", which runs tools without the sandbox/,
    );
    expect(() => parseInfraConfig({ ...config, singleTenant: "../acme" })).toThrow(
      /singleTenant: a tenant id/,
    );
  }
  // Workers that run no tool call serve every tenant without the sandbox; the API and they are told.
  for (const config of [fargate, lambda]) {
    const parsed = parseInfraConfig({ ...config, singleTenant: undefined, workerTools: false });
    expect(parsed.singleTenant).toBeUndefined();
    expect(sandboxEnvironment(parsed)).toEqual({ KEEL_SANDBOX: "off", KEEL_WORKER_TOOLS: "off" });
    expect(tenancyEnvironment(parsed)).toEqual({ KEEL_WORKER_TOOLS: "off" });
  }
  expect(tenancyEnvironment(parseInfraConfig(fargate))).toEqual({ KEEL_SINGLE_TENANT: "acme" });
  // The sandboxed mode serves every tenant unless one is declared.
  const ec2 = { ...exampleConfig("example.json") } as Record<string, unknown>;
  expect(parseInfraConfig({ ...ec2, singleTenant: "acme" }).singleTenant).toBe("acme");
});

test("EC2 workers need NAT and an arm64 instance type", () => {
  const ec2 = { ...exampleConfig("example.json") } as Record<string, unknown>;
  expect(() => parseInfraConfig({ ...ec2, network: { natGateways: 0 } })).toThrow(/natGateways/);
  expect(() => parseInfraConfig({ ...ec2, workers: { mode: "ec2", instanceType: "m7i.large" } })).toThrow(
    /arm64/,
  );
  expect(
    parseInfraConfig({ ...ec2, workers: { mode: "ec2", instanceType: "c7gn.2xlarge" } }).workers,
  ).toMatchObject({ instanceType: "c7gn.2xlarge" });
});

test("a telemetry receiver must be an http(s) URL; it reaches the API and the workers, content only when asked", () => {
  const ec2 = { ...exampleConfig("example.json") } as Record<string, unknown>;
  const withEndpoint = (observability: Record<string, unknown>) =>
    parseInfraConfig({ ...ec2, observability: { logRetentionDays: 30, ...observability } });
  expect(() => withEndpoint({ otelEndpoint: "grpc://collector:4317" })).toThrow(/otelEndpoint/);
  expect(() => withEndpoint({ otelEndpoint: "not a url" })).toThrow(/otelEndpoint/);
  expect(telemetryEnvironment(withEndpoint({}))).toEqual({});
  expect(telemetryEnvironment(withEndpoint({ otelEndpoint: "https://collector:4318" }))).toEqual({
    KEEL_OTEL_ENDPOINT: "https://collector:4318",
  });
  expect(
    telemetryEnvironment(withEndpoint({ otelEndpoint: "http://collector:4318", otelCaptureContent: true })),
  ).toEqual({ KEEL_OTEL_ENDPOINT: "http://collector:4318", KEEL_OTEL_CAPTURE_CONTENT: "true" });
});
