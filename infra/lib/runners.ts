/**
 * Launched environments on Fargate: the runner task the workers start once per session
 * (src/environments/launchers/fargate.ts), and the least the workers need to start it.
 *
 * - The task definition runs the Keel image as `keel runner` (entry point; the launcher adds
 *   `--env E --snapshots --idle-exit N` and the API URL and the session's token as overrides).
 *   Fargate gives each task a micro-VM of its own, which is the isolation boundary: the tool
 *   sandbox (bubblewrap) cannot run there, so the runner runs its tools with KEEL_SANDBOX=off,
 *   beside nothing but its own session's workspace and token.
 * - Its task role has no policy at all: everything a runner may do it does through the API with
 *   its token (no S3, no secrets, no AWS API). The execution role (ECS pulling the image and
 *   writing the logs) is not visible to the container.
 * - Its security group only dials out (the API, and what the run's tools fetch).
 * - The workers may RunTask this task definition in this cluster, tag, describe, list and stop
 *   tasks of this cluster, pass only the runner's two roles to ECS, and delete runner tokens'
 *   records (revocation; they issue them with the object writes they already have).
 */
import { Duration, Stack } from "aws-cdk-lib";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as ecs from "aws-cdk-lib/aws-ecs";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as logs from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import type { KeelInfraConfig, LaunchedEnvironmentsConfig } from "./config";
import { keelLogGroup } from "./runtime";
import { RUNNER_TOKENS_FOLDER, type SessionBucket } from "./storage";

/** The runner container's name: the launcher's overrides name it (KEEL_LAUNCHER_FARGATE_CONTAINER). */
const RUNNER_CONTAINER = "runner";
/** `keel runner` in the image (the Dockerfile builds the CLI to dist/cli.js). */
const RUNNER_ENTRY_POINT = ["node", "/app/dist/cli.js", "runner"];

export interface FargateRunnersProps {
  config: KeelInfraConfig;
  launched: LaunchedEnvironmentsConfig;
  vpc: ec2.IVpc;
  cluster: ecs.ICluster;
  subnets: ec2.SubnetSelection;
  /** Public subnets without NAT: tasks need a public IP to reach the API. */
  assignPublicIp: boolean;
  /** The API's URL as the runners reach it. */
  apiUrl: string;
  image: ecs.ContainerImage;
}

export class FargateRunners extends Construct {
  readonly taskDefinition: ecs.FargateTaskDefinition;
  readonly securityGroup: ec2.SecurityGroup;
  readonly logGroup: logs.LogGroup;
  private readonly props: FargateRunnersProps;

  constructor(scope: Construct, id: string, props: FargateRunnersProps) {
    super(scope, id);
    this.props = props;
    const { config, launched } = props;
    this.logGroup = keelLogGroup(this, "Logs", config);
    this.securityGroup = new ec2.SecurityGroup(this, "SecurityGroup", {
      vpc: props.vpc,
      allowAllOutbound: true,
      description: "Keel launched runners (outbound only)",
    });
    this.taskDefinition = new ecs.FargateTaskDefinition(this, "Task", {
      family: `keel-${config.environment}-runner`,
      cpu: launched.cpu,
      memoryLimitMiB: launched.memoryMiB,
      ephemeralStorageGiB: launched.ephemeralStorageGiB,
      runtimePlatform: {
        cpuArchitecture: ecs.CpuArchitecture.ARM64,
        operatingSystemFamily: ecs.OperatingSystemFamily.LINUX,
      },
      taskRole: new iam.Role(this, "TaskRole", {
        assumedBy: new iam.ServicePrincipal("ecs-tasks.amazonaws.com"),
        description:
          "Keel launched runners: no permissions (a runner acts only through the API, with its token)",
      }),
    });
    this.taskDefinition.addContainer(RUNNER_CONTAINER, {
      containerName: RUNNER_CONTAINER,
      image: props.image,
      essential: true,
      user: "node",
      entryPoint: RUNNER_ENTRY_POINT,
      environment: { KEEL_SANDBOX: "off", NODE_OPTIONS: "--enable-source-maps" },
      logging: ecs.LogDrivers.awsLogs({ streamPrefix: "runner", logGroup: this.logGroup }),
      stopTimeout: Duration.seconds(30),
      // An init process forwards signals and reaps the processes tools start.
      linuxParameters: new ecs.LinuxParameters(this, "Linux", { initProcessEnabled: true }),
    });
  }

  /** What the worker container needs to launch runners (src/worker/config.ts, KEEL_LAUNCHER_*). */
  workerEnvironment(): Record<string, string> {
    const { props } = this;
    return {
      KEEL_LAUNCHER: "fargate",
      KEEL_LAUNCHER_API_URL: props.apiUrl,
      KEEL_LAUNCHER_IDLE_SECONDS: String(props.launched.idleSeconds),
      KEEL_LAUNCHER_FARGATE_CLUSTER: props.cluster.clusterArn,
      KEEL_LAUNCHER_FARGATE_TASK_DEFINITION: this.taskDefinition.taskDefinitionArn,
      KEEL_LAUNCHER_FARGATE_CONTAINER: RUNNER_CONTAINER,
      KEEL_LAUNCHER_FARGATE_SUBNETS: props.vpc.selectSubnets(props.subnets).subnetIds.join(","),
      KEEL_LAUNCHER_FARGATE_SECURITY_GROUPS: this.securityGroup.securityGroupId,
      KEEL_LAUNCHER_FARGATE_ASSIGN_PUBLIC_IP: String(props.assignPublicIp),
    };
  }

  /**
   * The workers' rights over runner tasks: run this task definition in this cluster (with tags),
   * describe, list and stop this cluster's tasks, pass the runner's two roles to ECS only, and
   * revoke the tokens they issue (delete a token's record and its environment's index entry).
   */
  grantLaunch(workers: iam.IGrantable, storage: SessionBucket): void {
    const { cluster } = this.props;
    const inCluster = { ArnEquals: { "ecs:cluster": cluster.clusterArn } };
    const clusterTasks = Stack.of(this).formatArn({
      service: "ecs",
      resource: "task",
      resourceName: `${cluster.clusterName}/*`,
    });
    const principal = workers.grantPrincipal;
    principal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ["ecs:RunTask"],
        resources: [this.taskDefinition.taskDefinitionArn],
        conditions: inCluster,
      }),
    );
    principal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ["ecs:TagResource"],
        resources: [clusterTasks],
        conditions: { StringEquals: { "ecs:CreateAction": "RunTask" } },
      }),
    );
    principal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ["ecs:DescribeTasks", "ecs:StopTask"],
        resources: [clusterTasks],
        conditions: inCluster,
      }),
    );
    // ListTasks names no task ARN; the cluster condition scopes it.
    principal.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ["ecs:ListTasks"], resources: ["*"], conditions: inCluster }),
    );
    principal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ["iam:PassRole"],
        resources: [this.taskDefinition.taskRole.roleArn, this.taskDefinition.obtainExecutionRole().roleArn],
        conditions: { StringEquals: { "iam:PassedToService": "ecs-tasks.amazonaws.com" } },
      }),
    );
    principal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: "RevokeRunnerTokens",
        actions: ["s3:DeleteObject"],
        resources: [
          storage.bucket.arnForObjects(`${storage.prefix}${RUNNER_TOKENS_FOLDER}*`),
          storage.bucket.arnForObjects(`${storage.prefix}tenants/*/environments/*/tokens/*`),
        ],
      }),
    );
  }
}
