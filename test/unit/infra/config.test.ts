import { parseInfraConfig } from "../../../infra/lib/config";
import { exampleConfig } from "./synth";

test("both example configs are valid and fill in defaults", () => {
  const ecs = exampleConfig("example.json");
  expect(ecs.workers.mode).toBe("ecs");
  const lambda = exampleConfig("example-lambda.json");
  expect(lambda.workers).toMatchObject({ mode: "lambda", deploymentName: "keel", ephemeralStorageMiB: 4096 });
  expect(lambda.network).toEqual({ maxAzs: 2, natGateways: 1 });
});

test("a minimal config gets ECS workers, S3-managed storage under keel/ and 30-day logs", () => {
  const config = parseInfraConfig({
    environment: "dev",
    account: "123456789012",
    region: "eu-west-1",
    temporal: { address: "temporal.internal:7233", namespace: "default" },
  });
  expect(config.workers).toMatchObject({ mode: "ecs", minCount: 1, maxCount: 4, stopTimeoutSeconds: 120 });
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
  expect(() => parseInfraConfig({ ...config, workers: { mode: "ecs", minCount: 5, maxCount: 2 } })).toThrow(
    /minCount exceeds maxCount/,
  );
});
