/** One stack per environment: bucket, API, workers (ECS or Lambda), alarms. */
import { CfnOutput, Stack, type StackProps, Tags } from "aws-cdk-lib";
import type * as ecs from "aws-cdk-lib/aws-ecs";
import type { Construct } from "constructs";
import { KeelApi } from "./api";
import type { KeelInfraConfig } from "./config";
import { EcsWorkers } from "./ecs-workers";
import { LambdaWorkers } from "./lambda-workers";
import { KeelMonitoring } from "./monitoring";
import { importKeelSecrets } from "./secrets";
import { SessionBucket } from "./storage";
import { VaultKey } from "./vault";

export interface KeelStackProps extends StackProps {
  config: KeelInfraConfig;
  /** Replaces the Dockerfile build of the worker image (tests, prebuilt images). */
  workerImage?: ecs.ContainerImage;
  /** Template-only synthesis: skips the Lambda worker's workflow bundle and module copy. */
  skipLambdaRuntimeFiles?: boolean;
}

export class KeelStack extends Stack {
  readonly storage: SessionBucket;
  readonly api: KeelApi;
  readonly workers: EcsWorkers | LambdaWorkers;
  readonly monitoring: KeelMonitoring;
  /** The tenant secrets' KMS key: the API's and the workers' KEEL_VAULT_KMS_KEY_ID. */
  readonly vault: VaultKey;
  private readonly configuredZones?: string[];

  constructor(scope: Construct, id: string, props: KeelStackProps) {
    super(scope, id, {
      ...props,
      env: { account: props.config.account, region: props.config.region },
      description: `Keel durable coding agents (${props.config.environment})`,
    });
    const { config } = props;
    this.configuredZones = config.network.availabilityZones;
    Tags.of(this).add("keel:environment", config.environment);
    const region = config.region;

    this.storage = new SessionBucket(this, "Storage", {
      storage: config.storage,
      production: config.production,
    });
    const secrets = importKeelSecrets(this, config);
    this.monitoring = new KeelMonitoring(this, "Monitoring", { alarmEmail: config.observability.alarmEmail });

    this.api = new KeelApi(this, "Api", { config, storage: this.storage, secrets: secrets.api, region });
    this.monitoring.watchApi(this.api);
    this.vault = new VaultKey(this, "Vault", {
      environment: config.environment,
      production: config.production,
    });
    this.vault.grantUse(this.api.function);
    for (const [name, value] of Object.entries(this.vault.environment()))
      this.api.function.addEnvironment(name, value);

    const workers = config.workers;
    if (workers.mode !== "lambda") {
      const ecsWorkers = new EcsWorkers(this, "Workers", {
        config,
        workers,
        storage: this.storage,
        secrets: secrets.worker,
        region,
        apiUrl: this.api.url(config),
        image: props.workerImage,
      });
      this.monitoring.watchEcsService(ecsWorkers.cluster, ecsWorkers.service, workers.minCount);
      // The workers' own task role only: a launched runner gets a call's values from the API.
      this.vault.grantUse(ecsWorkers.taskDefinition.taskRole);
      for (const [name, value] of Object.entries(this.vault.environment()))
        ecsWorkers.taskDefinition.defaultContainer?.addEnvironment(name, value);
      this.workers = ecsWorkers;
      new CfnOutput(this, "WorkerService", { value: ecsWorkers.service.serviceName });
    } else {
      const lambdaWorkers = new LambdaWorkers(this, "Workers", {
        config,
        workers,
        storage: this.storage,
        secrets: secrets.worker,
        region,
        skipRuntimeFiles: props.skipLambdaRuntimeFiles,
      });
      this.monitoring.watchFunction("WorkerFunction", lambdaWorkers.function);
      this.vault.grantUse(lambdaWorkers.function);
      for (const [name, value] of Object.entries(this.vault.environment()))
        lambdaWorkers.function.addEnvironment(name, value);
      this.workers = lambdaWorkers;
      new CfnOutput(this, "WorkerFunctionVersionArn", {
        description: "Qualified ARN Temporal invokes (--aws-lambda-function-arn)",
        value: lambdaWorkers.version.functionArn,
      });
      new CfnOutput(this, "TemporalInvokeRoleArn", {
        description: "Role Temporal assumes (--aws-lambda-assume-role-arn)",
        value: lambdaWorkers.invokeRole.roleArn,
      });
    }
    new CfnOutput(this, "ApiUrl", { value: this.api.url(config) });
    new CfnOutput(this, "BucketName", { value: this.storage.bucket.bucketName });
    new CfnOutput(this, "AlarmTopicArn", { value: this.monitoring.topic.topicArn });
  }

  /** Configured zones need no lookup, so synthesis works without AWS credentials. */
  override get availabilityZones(): string[] {
    return this.configuredZones ?? super.availabilityZones;
  }
}

/** Stack names are per environment so dev and prod can share an account. */
export function stackNameFor(config: KeelInfraConfig): string {
  return `keel-${config.environment}`;
}
