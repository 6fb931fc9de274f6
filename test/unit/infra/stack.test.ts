import { Match, type Template } from "aws-cdk-lib/assertions";
import { actionsOf, exampleConfig, functionRole, roleStatements, synthesize, text } from "./synth";

// Synthesis bundles the API with esbuild: once per worker mode.
jest.setTimeout(180_000);

/** ECS on EC2, the default mode (sandboxed tools, every tenant). */
let ecsTemplate: Template;
/** ECS on Fargate and Lambda: no sandbox, one declared tenant. */
let fargateTemplate: Template;
let lambdaTemplate: Template;

beforeAll(() => {
  ecsTemplate = synthesize(exampleConfig("example.json")).template;
  fargateTemplate = synthesize(exampleConfig("example-fargate.json")).template;
  lambdaTemplate = synthesize(exampleConfig("example-lambda.json")).template;
});

const bothModes = () =>
  [
    ["ec2", ecsTemplate],
    ["fargate", fargateTemplate],
    ["lambda", lambdaTemplate],
  ] as const;

describe("session bucket", () => {
  test("encrypted, public access blocked, versioned, lifecycle on payloads and sessions", () => {
    for (const [, template] of bothModes()) {
      template.hasResourceProperties("AWS::S3::Bucket", {
        BucketEncryption: {
          ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: "AES256" } }],
        },
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
        VersioningConfiguration: { Status: "Enabled" },
        LifecycleConfiguration: {
          Rules: Match.arrayWith([
            Match.objectLike({ Prefix: "keel/payloads/", ExpirationInDays: 90, Status: "Enabled" }),
            Match.objectLike({ Prefix: "keel/idempotency/", ExpirationInDays: 2 }),
            Match.objectLike({
              Prefix: "keel/tenants/",
              Transitions: [{ StorageClass: "INTELLIGENT_TIERING", TransitionInDays: 30 }],
            }),
            Match.objectLike({
              NoncurrentVersionExpiration: { NoncurrentDays: 30 },
              ExpiredObjectDeleteMarker: true,
            }),
          ]),
        },
      });
    }
  });

  test("the bucket policy denies requests without TLS", () => {
    ecsTemplate.hasResourceProperties("AWS::S3::BucketPolicy", {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: "Deny",
            Action: "s3:*",
            Principal: { AWS: "*" },
            Condition: { Bool: { "aws:SecureTransport": "false" } },
          }),
        ]),
      },
    });
  });

  test("a KMS key from the config replaces S3-managed encryption", () => {
    const config = exampleConfig("example.json");
    config.storage.kmsKeyArn = "arn:aws:kms:us-east-1:123456789012:key/0a1b2c3d-1111-2222-3333-444455556666";
    const { template } = synthesize(config);
    template.hasResourceProperties("AWS::S3::Bucket", {
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [
          {
            ServerSideEncryptionByDefault: {
              SSEAlgorithm: "aws:kms",
              KMSMasterKeyID: config.storage.kmsKeyArn,
            },
            BucketKeyEnabled: true,
          },
        ],
      },
    });
    const { roleId } = functionRole(template, "ApiFunction");
    const kms = roleStatements(template, roleId).find((statement) =>
      actionsOf(statement).includes("kms:Decrypt"),
    );
    expect(kms?.Resource).toBe(config.storage.kmsKeyArn);
  });

  test("production retains the bucket; other environments remove it with the stack", () => {
    const config = exampleConfig("example.json");
    config.production = true;
    const { template } = synthesize(config);
    template.hasResource("AWS::S3::Bucket", { DeletionPolicy: "Retain", UpdateReplacePolicy: "Retain" });
    ecsTemplate.hasResource("AWS::S3::Bucket", { DeletionPolicy: "Delete" });
  });
});

describe("API", () => {
  test("Lambda on Node 22, arm64, with its environment and secret ARNs, no secret values", () => {
    const { functionId } = functionRole(ecsTemplate, "ApiFunction");
    const fn = ecsTemplate.findResources("AWS::Lambda::Function")[functionId]!;
    expect(fn.Properties).toMatchObject({
      Runtime: "nodejs22.x",
      Architectures: ["arm64"],
      Handler: "index.handler",
      Timeout: 29,
      Environment: {
        Variables: {
          KEEL_TEMPORAL_ADDRESS: "keel-dev.a1b2c.tmprl.cloud:7233",
          KEEL_TEMPORAL_NAMESPACE: "keel-dev.a1b2c",
          KEEL_TASK_QUEUE: "keel",
          KEEL_S3_PREFIX: "keel/",
          KEEL_S3_REGION: "us-east-1",
          KEEL_TEMPORAL_API_KEY_SECRET_ARN: expect.stringContaining("temporal-api-key"),
          KEEL_API_KEYS_SECRET_ARN: expect.stringContaining("api-keys"),
        },
      },
    });
    const variables = fn.Properties.Environment.Variables as Record<string, unknown>;
    expect(variables.KEEL_S3_BUCKET).toEqual({ Ref: expect.stringMatching(/^StorageBucket/) });
    expect(Object.keys(variables)).not.toContain("KEEL_TEMPORAL_API_KEY");
    expect(Object.keys(variables)).not.toContain("OPENAI_API_KEY_SECRET_ARN");
    // The Parameters and Secrets extension serves the secrets at cold start.
    expect(text(fn.Properties.Layers)).toContain("AWS-Parameters-and-Secrets-Lambda-Extension-Arm64");
  });

  test("IAM: read and put under the prefix, delete only idempotency records, no wildcard actions", () => {
    const { roleId } = functionRole(ecsTemplate, "ApiFunction");
    const statements = roleStatements(ecsTemplate, roleId);
    const s3Statements = statements.filter((statement) =>
      actionsOf(statement).some((a) => a.startsWith("s3:")),
    );
    const actions = s3Statements.flatMap(actionsOf).sort();
    expect(actions).toEqual(["s3:DeleteObject", "s3:GetObject", "s3:ListBucket", "s3:PutObject"]);
    for (const statement of statements) {
      for (const action of actionsOf(statement)) expect(action).not.toMatch(/\*/);
    }
    const byAction = (action: string) =>
      s3Statements.find((statement) => actionsOf(statement).includes(action))!;
    expect(text(byAction("s3:GetObject").Resource)).toContain("/keel/*");
    expect(text(byAction("s3:DeleteObject").Resource)).toContain("/keel/idempotency/*");
    // Session deletion (DELETE /v1/sessions/{id}) removes the session folder, snapshots included.
    expect(text(byAction("s3:DeleteObject").Resource)).toContain("/keel/tenants/*");
    // Slack event claims are released, and a deleted session's thread record removed.
    expect(text(byAction("s3:DeleteObject").Resource)).toContain("/keel/integrations/*");
    expect(byAction("s3:ListBucket").Condition).toEqual({ StringLike: { "s3:prefix": ["keel/*"] } });
    const secretReads = statements.filter((statement) =>
      actionsOf(statement).includes("secretsmanager:GetSecretValue"),
    );
    expect(text(secretReads.map((statement) => statement.Resource))).toContain("temporal-api-key");
    expect(text(secretReads.map((statement) => statement.Resource))).not.toContain("openai");
  });

  test("HTTP API with a throttled, access-logged default stage routed to the function", () => {
    ecsTemplate.resourceCountIs("AWS::ApiGatewayV2::Api", 1);
    ecsTemplate.hasResourceProperties("AWS::ApiGatewayV2::Api", { ProtocolType: "HTTP" });
    ecsTemplate.hasResourceProperties("AWS::ApiGatewayV2::Route", { RouteKey: "$default" });
    ecsTemplate.hasResourceProperties("AWS::ApiGatewayV2::Stage", {
      StageName: "$default",
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 },
      AccessLogSettings: {
        DestinationArn: Match.anyValue(),
        Format: Match.stringLikeRegexp('"status":"\\$context.status"'),
      },
    });
  });

  test("an optional custom domain is mapped to the stage", () => {
    const config = exampleConfig("example.json");
    config.api.domain = {
      name: "keel.example.com",
      certificateArn: "arn:aws:acm:us-east-1:123456789012:certificate/abcd-1234",
    };
    const { template } = synthesize(config);
    template.hasResourceProperties("AWS::ApiGatewayV2::DomainName", { DomainName: "keel.example.com" });
    template.resourceCountIs("AWS::ApiGatewayV2::ApiMapping", 1);
  });
});

describe("log groups", () => {
  test("every log group has the configured retention", () => {
    for (const [, template] of bothModes()) {
      const groups = Object.values(template.findResources("AWS::Logs::LogGroup"));
      expect(groups.length).toBeGreaterThanOrEqual(3);
      for (const group of groups) expect(group.Properties.RetentionInDays).toBe(30);
    }
  });
});

/** The environment of the template's one worker container, as a name → value map. */
function workerEnvironment(template: Template): Record<string, unknown> {
  const containers = Object.values(template.findResources("AWS::ECS::TaskDefinition")).flatMap(
    (task) =>
      task.Properties.ContainerDefinitions as {
        Name: string;
        Environment: { Name: string; Value: unknown }[];
      }[],
  );
  const container = containers.find((candidate) => candidate.Name === "worker");
  return Object.fromEntries(container!.Environment.map(({ Name, Value }) => [Name, Value]));
}

describe("ECS workers on EC2 (default: the tool sandbox runs)", () => {
  test("EC2 capacity: an Auto Scaling group of ECS-optimized AL2023 arm64 instances behind a capacity provider", () => {
    ecsTemplate.hasResourceProperties("AWS::EC2::LaunchTemplate", {
      LaunchTemplateData: Match.objectLike({
        InstanceType: "m7g.large",
        ImageId: { Ref: Match.stringLikeRegexp("ecsoptimizedamiamazonlinux2023arm64") },
        // Containers cannot reach the instance role: IMDSv2 with one hop.
        MetadataOptions: { HttpTokens: "required", HttpPutResponseHopLimit: 1 },
        BlockDeviceMappings: [
          { DeviceName: "/dev/xvda", Ebs: { Encrypted: true, VolumeSize: 100, VolumeType: "gp3" } },
        ],
      }),
    });
    const launchTemplate = Object.values(ecsTemplate.findResources("AWS::EC2::LaunchTemplate"))[0]!;
    const userData = text(launchTemplate.Properties.LaunchTemplateData.UserData);
    expect(userData).toContain("user.max_user_namespaces=15000");
    expect(userData).toContain("ECS_AWSVPC_BLOCK_IMDS=true");
    ecsTemplate.hasResourceProperties("AWS::AutoScaling::AutoScalingGroup", { MinSize: "1", MaxSize: "4" });
    ecsTemplate.hasResourceProperties("AWS::ECS::CapacityProvider", {
      AutoScalingGroupProvider: Match.objectLike({
        ManagedScaling: Match.objectLike({ Status: "ENABLED" }),
        ManagedDraining: "ENABLED",
      }),
    });
    ecsTemplate.resourceCountIs("AWS::ECS::ClusterCapacityProviderAssociations", 1);
  });

  test("the service runs on that capacity with CPU autoscaling and circuit breaker; no Fargate", () => {
    ecsTemplate.hasResourceProperties("AWS::ECS::Service", {
      CapacityProviderStrategy: [
        { CapacityProvider: { Ref: Match.stringLikeRegexp("Capacity") }, Weight: 1 },
      ],
      DesiredCount: 1,
      DeploymentConfiguration: Match.objectLike({
        DeploymentCircuitBreaker: { Enable: true, Rollback: true },
      }),
    });
    const service = Object.values(ecsTemplate.findResources("AWS::ECS::Service"))[0]!;
    expect(service.Properties.LaunchType).toBeUndefined();
    ecsTemplate.hasResourceProperties("AWS::ApplicationAutoScaling::ScalableTarget", {
      MinCapacity: 1,
      MaxCapacity: 4,
    });
    ecsTemplate.hasResourceProperties("AWS::ApplicationAutoScaling::ScalingPolicy", {
      TargetTrackingScalingPolicyConfiguration: Match.objectLike({
        TargetValue: 60,
        PredefinedMetricSpecification: { PredefinedMetricType: "ECSServiceAverageCPUUtilization" },
      }),
    });
  });

  test("task: what bubblewrap needs (privileged, as the non-root node user), the sandbox left on, all tenants", () => {
    ecsTemplate.hasResourceProperties("AWS::ECS::TaskDefinition", {
      RequiresCompatibilities: ["EC2"],
      NetworkMode: "awsvpc",
      Volumes: [{ Name: "workspaces", DockerVolumeConfiguration: { Scope: "task", Driver: "local" } }],
      ContainerDefinitions: [
        Match.objectLike({
          Cpu: 1024,
          Memory: 2048,
          Privileged: true,
          User: "node",
          StopTimeout: 120,
          LinuxParameters: Match.objectLike({ InitProcessEnabled: true }),
          MountPoints: [
            { ContainerPath: "/var/lib/keel/workspaces", SourceVolume: "workspaces", ReadOnly: false },
          ],
          Secrets: Match.arrayWith([
            Match.objectLike({
              Name: "KEEL_TEMPORAL_API_KEY",
              ValueFrom: Match.stringLikeRegexp("temporal-api-key"),
            }),
            Match.objectLike({ Name: "OPENAI_API_KEY" }),
            Match.objectLike({ Name: "ANTHROPIC_API_KEY" }),
          ]),
        }),
      ],
    });
    const env = workerEnvironment(ecsTemplate);
    expect(env).toMatchObject({
      KEEL_WORKSPACE_ROOT: "/var/lib/keel/workspaces",
      KEEL_WORKFLOW_BUNDLE: "/app/dist/workflow-bundle.js",
    });
    expect(env.KEEL_SANDBOX).toBeUndefined();
    expect(env.KEEL_SINGLE_TENANT).toBeUndefined();
  });

  test("task role: read and put under the prefix, and the tenant secrets' key (vault.test.ts), nothing else", () => {
    const tasks = ecsTemplate.findResources("AWS::ECS::TaskDefinition");
    const task = Object.values(tasks)[0]!;
    const roleId = (task.Properties.TaskRoleArn as { "Fn::GetAtt": [string, string] })["Fn::GetAtt"][0];
    const actions = roleStatements(ecsTemplate, roleId).flatMap(actionsOf).sort();
    expect(actions).toEqual([
      "kms:Decrypt",
      "kms:GenerateDataKey",
      "s3:GetObject",
      "s3:ListBucket",
      "s3:PutObject",
    ]);
  });
});

describe("ECS workers on Fargate (single tenant, no sandbox)", () => {
  test("Fargate service on arm64; the task turns the sandbox off only for the declared tenant", () => {
    fargateTemplate.hasResourceProperties("AWS::ECS::Service", { LaunchType: "FARGATE", DesiredCount: 1 });
    fargateTemplate.resourceCountIs("AWS::AutoScaling::AutoScalingGroup", 0);
    fargateTemplate.hasResourceProperties("AWS::ECS::TaskDefinition", {
      Cpu: "1024",
      Memory: "2048",
      EphemeralStorage: { SizeInGiB: 40 },
      RuntimePlatform: { CpuArchitecture: "ARM64", OperatingSystemFamily: "LINUX" },
      Volumes: [{ Name: "workspaces" }],
      ContainerDefinitions: [Match.objectLike({ Privileged: false, User: "node" })],
    });
    expect(workerEnvironment(fargateTemplate)).toMatchObject({
      KEEL_SANDBOX: "off",
      KEEL_SINGLE_TENANT: "acme",
    });
  });

  test("the API of a single-tenant deployment refuses other tenants too", () => {
    for (const template of [fargateTemplate, lambdaTemplate]) {
      const { functionId } = functionRole(template, "ApiFunction");
      const fn = template.findResources("AWS::Lambda::Function")[functionId]!;
      expect(fn.Properties.Environment.Variables.KEEL_SINGLE_TENANT).toBe("acme");
    }
    const { functionId } = functionRole(ecsTemplate, "ApiFunction");
    const fn = ecsTemplate.findResources("AWS::Lambda::Function")[functionId]!;
    expect(fn.Properties.Environment.Variables.KEEL_SINGLE_TENANT).toBeUndefined();
  });
});

describe("Lambda workers", () => {
  const workerFunction = () => {
    const { functionId, roleId } = functionRole(lambdaTemplate, "WorkersFunction");
    return { fn: lambdaTemplate.findResources("AWS::Lambda::Function")[functionId]!, functionId, roleId };
  };

  test("no ECS resources; a 15-minute arm64 function with its deployment version", () => {
    lambdaTemplate.resourceCountIs("AWS::ECS::Service", 0);
    const { fn } = workerFunction();
    expect(fn.Properties).toMatchObject({
      Runtime: "nodejs22.x",
      Architectures: ["arm64"],
      Timeout: 900,
      EphemeralStorage: { Size: 4096 },
      Environment: {
        Variables: {
          KEEL_WORKER_DEPLOYMENT_NAME: "keel",
          KEEL_WORKER_BUILD_ID: "2025-01-01.1",
          KEEL_WORKFLOW_BUNDLE: "/var/task/workflow-bundle.js",
          KEEL_WORKFLOW_BUNDLE_TRACED: "/var/task/workflow-bundle.traced.js",
          // Lambda cannot create user namespaces: the sandbox is off for the declared tenant only.
          KEEL_SANDBOX: "off",
          KEEL_SINGLE_TENANT: "acme",
          OPENAI_API_KEY_SECRET_ARN: expect.stringContaining("openai-api-key"),
        },
      },
    });
  });

  test("the config's telemetry receiver reaches the worker and the API functions (and only where configured)", () => {
    const endpoint = "https://otel-collector.internal.example.com:4318";
    expect(workerFunction().fn.Properties.Environment.Variables.KEEL_OTEL_ENDPOINT).toBe(endpoint);
    const { functionId } = functionRole(lambdaTemplate, "ApiFunction");
    const api = lambdaTemplate.findResources("AWS::Lambda::Function")[functionId]!;
    expect(api.Properties.Environment.Variables.KEEL_OTEL_ENDPOINT).toBe(endpoint);
    expect(workerEnvironment(ecsTemplate).KEEL_OTEL_ENDPOINT).toBeUndefined();
  });

  test("a published version is retained and is what Temporal is told to invoke", () => {
    const { functionId } = workerFunction();
    const versions = lambdaTemplate.findResources("AWS::Lambda::Version");
    const [versionId, version] = Object.entries(versions).find(
      ([, resource]) => resource.Properties.FunctionName.Ref === functionId,
    )!;
    expect(version.DeletionPolicy).toBe("Retain");
    const outputs = lambdaTemplate.findOutputs("WorkerFunctionVersionArn");
    expect(text(Object.values(outputs)[0]!.Value)).toBe(text({ Ref: versionId }));
  });

  test("Temporal's invoke role: external id, published versions only, never $LATEST", () => {
    const { functionId } = workerFunction();
    const roles = lambdaTemplate.findResources("AWS::IAM::Role", {
      Properties: { Description: Match.stringLikeRegexp("Temporal") },
    });
    const [roleId, role] = Object.entries(roles)[0]!;
    expect(role.Properties.AssumeRolePolicyDocument.Statement).toEqual([
      {
        Action: "sts:AssumeRole",
        Effect: "Allow",
        Principal: { AWS: "arn:aws:iam::111122223333:role/temporal-cloud-serverless-invoker" },
        Condition: { StringEquals: { "sts:ExternalId": "keel-dev-external-id" } },
      },
    ]);
    const statements = roleStatements(lambdaTemplate, roleId);
    expect(statements).toHaveLength(2);
    const allow = statements.find((statement) => statement.Effect === "Allow")!;
    const deny = statements.find((statement) => statement.Effect === "Deny")!;
    expect(actionsOf(allow)).toEqual(["lambda:InvokeFunction"]);
    expect(text(allow.Resource)).toContain(functionId);
    expect(text(allow.Resource)).toContain(':*"');
    expect(text(deny.Resource)).toContain(":$LATEST");
  });

  test("worker role: read and put under the prefix, provider and Temporal secrets, no wildcards", () => {
    const { roleId } = workerFunction();
    const statements = roleStatements(lambdaTemplate, roleId);
    const s3Actions = statements.flatMap(actionsOf).filter((action) => action.startsWith("s3:"));
    expect(s3Actions.sort()).toEqual(["s3:GetObject", "s3:ListBucket", "s3:PutObject"]);
    for (const action of statements.flatMap(actionsOf)) expect(action).not.toContain("*");
    const secrets = text(statements.map((statement) => statement.Resource));
    for (const name of ["temporal-api-key", "openai-api-key", "anthropic-api-key"])
      expect(secrets).toContain(name);
  });
});

describe("alarms", () => {
  const alarmMetrics = (template: Template) =>
    Object.values(template.findResources("AWS::CloudWatch::Alarm")).map(
      (alarm) => `${alarm.Properties.Namespace}/${alarm.Properties.MetricName}`,
    );

  test("API 5xx, Lambda errors and throttles, ECS task failures and missing tasks", () => {
    expect(alarmMetrics(ecsTemplate).sort()).toEqual(
      [
        "AWS/ApiGateway/5xx",
        "AWS/Lambda/Errors",
        "AWS/Lambda/Throttles",
        "AWS/Events/TriggeredRules",
        "ECS/ContainerInsights/RunningTaskCount",
      ].sort(),
    );
    ecsTemplate.hasResourceProperties("AWS::Events::Rule", {
      EventPattern: Match.objectLike({
        detail: Match.objectLike({
          lastStatus: ["STOPPED"],
          stopCode: ["EssentialContainerExited", "TaskFailedToStart"],
        }),
      }),
    });
  });

  test("Lambda worker errors and throttles are watched too; every alarm notifies the topic", () => {
    expect(alarmMetrics(lambdaTemplate).filter((metric) => metric.startsWith("AWS/Lambda/"))).toHaveLength(4);
    for (const [, template] of bothModes()) {
      for (const alarm of Object.values(template.findResources("AWS::CloudWatch::Alarm"))) {
        expect(alarm.Properties.AlarmActions).toEqual([{ Ref: expect.stringMatching(/^MonitoringAlarms/) }]);
      }
    }
  });
});
