/**
 * Workers as an ECS service: the image from the repository's Dockerfile, CPU autoscaling, the
 * session workspaces on a task volume, secrets injected by ECS, SIGTERM → drain.
 *
 * Two capacities:
 * - `ec2` (the default): tasks on ECS-optimized Amazon Linux 2023 instances of an Auto Scaling
 *   group, where the tool sandbox (bubblewrap) runs. Docker's default seccomp profile refuses the
 *   `clone`/`unshare` of new user namespaces, and its masked `/proc` paths make the kernel refuse
 *   the fresh `/proc` the sandbox mounts for its own PID namespace; ECS can set neither a seccomp
 *   profile nor unmasked system paths, so the container runs privileged — as the image's non-root
 *   `node` user, which holds no capability — and every tool command runs inside bubblewrap with
 *   no capability, no worker process in sight and nothing of the worker's environment. The worker
 *   checks at start that the sandbox works and exits otherwise (the deployment then rolls back).
 *   Instances answer the metadata service with IMDSv2 only and one hop, and the ECS agent blocks
 *   it for awsvpc tasks, so no container — sandboxed or not — reaches the instance role.
 * - `fargate`: Fargate's fixed seccomp profile refuses user namespaces, so tools run without the
 *   sandbox (KEEL_SANDBOX=off) and the deployment serves its declared `singleTenant` only.
 */
import { Duration } from "aws-cdk-lib";
import * as autoscaling from "aws-cdk-lib/aws-autoscaling";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import { Platform } from "aws-cdk-lib/aws-ecr-assets";
import * as ecs from "aws-cdk-lib/aws-ecs";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as logs from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import type { Ec2WorkersConfig, EcsWorkersConfig, FargateWorkersConfig, KeelInfraConfig } from "./config";
import { FargateRunners } from "./runners";
import { keelEnvironment, keelLogGroup, providerEnvironment, REPO_ROOT, sandboxEnvironment } from "./runtime";
import type { SecretBinding } from "./secrets";
import type { SessionBucket } from "./storage";

/** Where the image keeps the session workspaces (a task volume) and its prebuilt workflow bundle. */
const CONTAINER_WORKSPACE_ROOT = "/var/lib/keel/workspaces";
const CONTAINER_WORKFLOW_BUNDLE = "/app/dist/workflow-bundle.js";
/** The image's unprivileged user (Dockerfile `USER node`), stated again so no task runs as root. */
const CONTAINER_USER = "node";
const WORKSPACE_VOLUME = "workspaces";
const SCALE_IN_COOLDOWN = Duration.minutes(5);
const SCALE_OUT_COOLDOWN = Duration.minutes(1);
/** Bubblewrap needs unprivileged user namespaces on the host; set at boot, whatever the AMI's default. */
const USER_NAMESPACES_SYSCTL = "user.max_user_namespaces=15000";

export interface EcsWorkersProps {
  config: KeelInfraConfig;
  workers: EcsWorkersConfig;
  storage: SessionBucket;
  secrets: SecretBinding[];
  region: string;
  /** The API's URL: launched runners (config `launchedEnvironments`) reach the API there. */
  apiUrl: string;
  /** The worker image (and the launched runners'); built from the repository's Dockerfile when unset. */
  image?: ecs.ContainerImage;
}

export class EcsWorkers extends Construct {
  readonly cluster: ecs.Cluster;
  readonly service: ecs.Ec2Service | ecs.FargateService;
  readonly taskDefinition: ecs.Ec2TaskDefinition | ecs.FargateTaskDefinition;
  readonly logGroup: logs.LogGroup;
  /** The instances of the `ec2` mode. */
  readonly autoScalingGroup?: autoscaling.AutoScalingGroup;
  /** The runner tasks of launched environments, when the config enables them. */
  readonly runners?: FargateRunners;

  constructor(scope: Construct, id: string, props: EcsWorkersProps) {
    super(scope, id);
    const { config, workers, storage } = props;
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
    const subnets = {
      subnetType: publicSubnetsOnly ? ec2.SubnetType.PUBLIC : ec2.SubnetType.PRIVATE_WITH_EGRESS,
    };
    // Workers only dial out (Temporal, S3, LLM providers): no inbound rules.
    const securityGroup = new ec2.SecurityGroup(this, "SecurityGroup", {
      vpc,
      allowAllOutbound: true,
      description: "Keel workers",
    });
    const serviceSettings = {
      cluster: this.cluster,
      desiredCount: workers.minCount,
      vpcSubnets: subnets,
      securityGroups: [securityGroup],
      circuitBreaker: { enable: true, rollback: true },
      minHealthyPercent: 100,
      maxHealthyPercent: 200,
    };
    this.logGroup = keelLogGroup(this, "Logs", config);
    const image =
      props.image ??
      ecs.ContainerImage.fromAsset(REPO_ROOT, { file: "Dockerfile", platform: Platform.LINUX_ARM64 });
    if (config.launchedEnvironments) {
      this.runners = new FargateRunners(this, "Runners", {
        config,
        launched: config.launchedEnvironments,
        vpc,
        cluster: this.cluster,
        subnets,
        assignPublicIp: publicSubnetsOnly,
        apiUrl: props.apiUrl,
        image,
      });
    }
    const launcherEnvironment = this.runners?.workerEnvironment() ?? {};

    if (workers.mode === "ec2") {
      const { taskDefinition, autoScalingGroup, capacityProvider } = this.ec2Capacity(vpc, subnets, workers);
      this.taskDefinition = taskDefinition;
      this.autoScalingGroup = autoScalingGroup;
      this.addWorkerContainer(props, { privileged: true, image, launcherEnvironment });
      this.service = new ecs.Ec2Service(this, "Service", {
        ...serviceSettings,
        taskDefinition,
        capacityProviderStrategies: [{ capacityProvider: capacityProvider.capacityProviderName, weight: 1 }],
      });
    } else {
      const taskDefinition = fargateTask(this, workers);
      this.taskDefinition = taskDefinition;
      this.addWorkerContainer(props, { privileged: false, image, launcherEnvironment });
      this.service = new ecs.FargateService(this, "Service", {
        ...serviceSettings,
        taskDefinition,
        assignPublicIp: publicSubnetsOnly,
      });
    }
    storage.grantSessionAccess(this.taskDefinition.taskRole, { read: true, write: true });
    this.runners?.grantLaunch(this.taskDefinition.taskRole, storage);

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

  /**
   * The instances tasks run on: ECS-optimized Amazon Linux 2023 (arm64) with user namespaces
   * allowed, IMDSv2 only with one hop, an encrypted root volume, and a capacity provider that
   * scales them with the tasks and drains an instance before it is terminated.
   */
  private ec2Capacity(vpc: ec2.IVpc, subnets: ec2.SubnetSelection, workers: Ec2WorkersConfig) {
    const userData = ec2.UserData.forLinux();
    userData.addCommands(
      `echo '${USER_NAMESPACES_SYSCTL}' > /etc/sysctl.d/90-keel-user-namespaces.conf`,
      "sysctl --system",
      // awsvpc tasks cannot reach the instance metadata service (and so not the instance role).
      "echo 'ECS_AWSVPC_BLOCK_IMDS=true' >> /etc/ecs/ecs.config",
    );
    const launchTemplate = new ec2.LaunchTemplate(this, "LaunchTemplate", {
      instanceType: new ec2.InstanceType(workers.instanceType),
      machineImage: ecs.EcsOptimizedImage.amazonLinux2023(ecs.AmiHardwareType.ARM),
      userData,
      role: new iam.Role(this, "InstanceRole", {
        assumedBy: new iam.ServicePrincipal("ec2.amazonaws.com"),
        description: "Keel worker instances (ECS agent only; tasks have their own role)",
      }),
      requireImdsv2: true,
      httpPutResponseHopLimit: 1,
      blockDevices: [
        {
          deviceName: "/dev/xvda",
          volume: ec2.BlockDeviceVolume.ebs(workers.rootVolumeGiB, {
            volumeType: ec2.EbsDeviceVolumeType.GP3,
            encrypted: true,
          }),
        },
      ],
    });
    const autoScalingGroup = new autoscaling.AutoScalingGroup(this, "Instances", {
      vpc,
      vpcSubnets: subnets,
      launchTemplate,
      minCapacity: workers.minInstances,
      maxCapacity: workers.maxInstances,
    });
    const capacityProvider = new ecs.AsgCapacityProvider(this, "Capacity", {
      autoScalingGroup,
      machineImageType: ecs.MachineImageType.AMAZON_LINUX_2,
      // Tasks finish their drain window before their instance goes.
      enableManagedDraining: true,
      enableManagedTerminationProtection: false,
    });
    this.cluster.addAsgCapacityProvider(capacityProvider);
    const taskDefinition = new ecs.Ec2TaskDefinition(this, "Task", {
      networkMode: ecs.NetworkMode.AWS_VPC,
      volumes: [
        {
          name: WORKSPACE_VOLUME,
          dockerVolumeConfiguration: { scope: ecs.Scope.TASK, driver: "local" },
        },
      ],
    });
    return { taskDefinition, autoScalingGroup, capacityProvider };
  }

  /** The worker container, the same in both modes but for its privilege and sandbox settings. */
  private addWorkerContainer(
    props: EcsWorkersProps,
    options: { privileged: boolean; image: ecs.ContainerImage; launcherEnvironment: Record<string, string> },
  ): void {
    const { config, workers, storage, secrets, region } = props;
    const container = this.taskDefinition.addContainer("worker", {
      image: options.image,
      essential: true,
      user: CONTAINER_USER,
      privileged: options.privileged,
      ...(workers.mode === "ec2" ? { cpu: workers.cpu, memoryLimitMiB: workers.memoryMiB } : {}),
      environment: {
        ...keelEnvironment(config, storage, region),
        ...providerEnvironment(config),
        ...sandboxEnvironment(config),
        KEEL_WORKSPACE_ROOT: CONTAINER_WORKSPACE_ROOT,
        KEEL_WORKFLOW_BUNDLE: CONTAINER_WORKFLOW_BUNDLE,
        KEEL_MAX_CONCURRENT_ACTIVITIES: String(workers.maxConcurrentActivities),
        ...options.launcherEnvironment,
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
  }
}

function fargateTask(scope: Construct, workers: FargateWorkersConfig): ecs.FargateTaskDefinition {
  return new ecs.FargateTaskDefinition(scope, "Task", {
    cpu: workers.cpu,
    memoryLimitMiB: workers.memoryMiB,
    ephemeralStorageGiB: workers.workspaceStorageGiB,
    runtimePlatform: {
      cpuArchitecture: ecs.CpuArchitecture.ARM64,
      operatingSystemFamily: ecs.OperatingSystemFamily.LINUX,
    },
    volumes: [{ name: WORKSPACE_VOLUME }],
  });
}
