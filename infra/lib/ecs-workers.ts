/**
 * Workers as an ECS Fargate service: the image from the repository's Dockerfile, CPU autoscaling,
 * the session workspaces on the task's own storage, secrets injected by ECS, SIGTERM → drain.
 */
import { Duration } from "aws-cdk-lib";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import { Platform } from "aws-cdk-lib/aws-ecr-assets";
import * as ecs from "aws-cdk-lib/aws-ecs";
import type * as logs from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import type { EcsWorkersConfig, KeelInfraConfig } from "./config";
import { keelEnvironment, keelLogGroup, providerEnvironment, REPO_ROOT } from "./runtime";
import type { SecretBinding } from "./secrets";
import type { SessionBucket } from "./storage";

/** Where the image keeps the session workspaces (a task volume) and its prebuilt workflow bundle. */
export const CONTAINER_WORKSPACE_ROOT = "/var/lib/keel/workspaces";
export const CONTAINER_WORKFLOW_BUNDLE = "/app/dist/workflow-bundle.js";
const WORKSPACE_VOLUME = "workspaces";
const SCALE_IN_COOLDOWN = Duration.minutes(5);
const SCALE_OUT_COOLDOWN = Duration.minutes(1);

export interface EcsWorkersProps {
  config: KeelInfraConfig;
  workers: EcsWorkersConfig;
  storage: SessionBucket;
  secrets: SecretBinding[];
  region: string;
  /** The worker image; built from the repository's Dockerfile when unset. */
  image?: ecs.ContainerImage;
}

export class EcsWorkers extends Construct {
  readonly cluster: ecs.Cluster;
  readonly service: ecs.FargateService;
  readonly taskDefinition: ecs.FargateTaskDefinition;
  readonly logGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: EcsWorkersProps) {
    super(scope, id);
    const { config, workers, storage, secrets, region } = props;
    const publicSubnetsOnly = config.network.natGateways === 0;
    const vpc = new ec2.Vpc(this, "Vpc", {
      ...(config.network.availabilityZones
        ? { availabilityZones: config.network.availabilityZones }
        : { maxAzs: config.network.maxAzs }),
      natGateways: config.network.natGateways,
      subnetConfiguration: publicSubnetsOnly
        ? [{ name: "public", subnetType: ec2.SubnetType.PUBLIC }]
        : [
            { name: "public", subnetType: ec2.SubnetType.PUBLIC },
            { name: "workers", subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS },
          ],
    });
    // Session objects go through a gateway endpoint: free, and no NAT traffic for S3.
    vpc.addGatewayEndpoint("S3", { service: ec2.GatewayVpcEndpointAwsService.S3 });
    this.cluster = new ecs.Cluster(this, "Cluster", {
      vpc,
      containerInsightsV2: ecs.ContainerInsights.ENABLED,
    });

    const cpuArchitecture = ecs.CpuArchitecture.ARM64;
    this.taskDefinition = new ecs.FargateTaskDefinition(this, "Task", {
      cpu: workers.cpu,
      memoryLimitMiB: workers.memoryMiB,
      ephemeralStorageGiB: workers.workspaceStorageGiB,
      runtimePlatform: { cpuArchitecture, operatingSystemFamily: ecs.OperatingSystemFamily.LINUX },
      volumes: [{ name: WORKSPACE_VOLUME }],
    });
    storage.grantSessionAccess(this.taskDefinition.taskRole, { read: true, write: true });

    this.logGroup = keelLogGroup(this, "Logs", config);
    const container = this.taskDefinition.addContainer("worker", {
      image:
        props.image ??
        ecs.ContainerImage.fromAsset(REPO_ROOT, { file: "Dockerfile", platform: Platform.LINUX_ARM64 }),
      essential: true,
      environment: {
        ...keelEnvironment(config, storage, region),
        ...providerEnvironment(config),
        KEEL_WORKSPACE_ROOT: CONTAINER_WORKSPACE_ROOT,
        KEEL_WORKFLOW_BUNDLE: CONTAINER_WORKFLOW_BUNDLE,
        KEEL_MAX_CONCURRENT_ACTIVITIES: String(workers.maxConcurrentActivities),
        // Fargate's fixed seccomp profile refuses new user namespaces: bubblewrap cannot start, so
        // tool commands run unsandboxed, which the worker logs at every start (docs/deploy.md).
        KEEL_SANDBOX: "off",
      },
      secrets: Object.fromEntries(
        secrets.map(({ envName, secret }) => [envName, ecs.Secret.fromSecretsManager(secret)]),
      ),
      logging: ecs.LogDrivers.awsLogs({ streamPrefix: "worker", logGroup: this.logGroup }),
      // ECS sends SIGTERM, waits this long, then SIGKILL: the worker drains in between.
      stopTimeout: Duration.seconds(workers.stopTimeoutSeconds),
      // An init process forwards signals and reaps the processes tools start.
      linuxParameters: new ecs.LinuxParameters(this, "Linux", { initProcessEnabled: true }),
    });
    container.addMountPoints({
      containerPath: CONTAINER_WORKSPACE_ROOT,
      sourceVolume: WORKSPACE_VOLUME,
      readOnly: false,
    });

    this.service = new ecs.FargateService(this, "Service", {
      cluster: this.cluster,
      taskDefinition: this.taskDefinition,
      desiredCount: workers.minCount,
      assignPublicIp: publicSubnetsOnly,
      vpcSubnets: {
        subnetType: publicSubnetsOnly ? ec2.SubnetType.PUBLIC : ec2.SubnetType.PRIVATE_WITH_EGRESS,
      },
      circuitBreaker: { enable: true, rollback: true },
      // Workers only dial out (Temporal, S3, LLM providers): no inbound rules.
      securityGroups: [
        new ec2.SecurityGroup(this, "SecurityGroup", {
          vpc,
          allowAllOutbound: true,
          description: "Keel workers",
        }),
      ],
      minHealthyPercent: 100,
      maxHealthyPercent: 200,
    });
    const scaling = this.service.autoScaleTaskCount({
      minCapacity: workers.minCount,
      maxCapacity: workers.maxCount,
    });
    scaling.scaleOnCpuUtilization("Cpu", {
      targetUtilizationPercent: workers.targetCpuPercent,
      scaleInCooldown: SCALE_IN_COOLDOWN,
      scaleOutCooldown: SCALE_OUT_COOLDOWN,
    });
  }
}
