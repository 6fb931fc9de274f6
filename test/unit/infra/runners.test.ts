/**
 * Launched environments on Fargate (config `launchedEnvironments`, example-fargate.json): the
 * runner task, its roles with nothing granted to the runner, and the workers' scoped rights.
 */
import type { Template } from "aws-cdk-lib/assertions";
import { parseInfraConfig } from "../../../infra/lib/config";
import { actionsOf, exampleConfig, roleStatements, synthesize, text } from "./synth";

// Synthesis bundles the API with esbuild: twice here.
jest.setTimeout(180_000);

let launched: Template;
let withoutRunners: Template;

beforeAll(() => {
  launched = synthesize(exampleConfig("example-fargate.json")).template;
  // The same deployment on EC2 workers, with launched environments too.
  const ec2 = exampleConfig("example.json");
  ec2.launchedEnvironments = { cpu: 512, memoryMiB: 1024, ephemeralStorageGiB: 30, idleSeconds: 120 };
  const ec2Template = synthesize(ec2).template;
  runnersTemplates.push(["fargate workers", launched], ["ec2 workers", ec2Template]);
  withoutRunners = synthesize(exampleConfig("example.json")).template;
});

const runnersTemplates: Array<[string, Template]> = [];

interface TaskDefinition {
  id: string;
  properties: Record<string, unknown> & {
    ContainerDefinitions: Array<Record<string, unknown> & { Name: string }>;
    TaskRoleArn: { "Fn::GetAtt": [string, string] };
    ExecutionRoleArn: { "Fn::GetAtt": [string, string] };
  };
}

function taskWithContainer(template: Template, name: string): TaskDefinition {
  const tasks = template.findResources("AWS::ECS::TaskDefinition");
  const found = Object.entries(tasks).find(([, task]) =>
    (task.Properties.ContainerDefinitions as Array<{ Name: string }>).some(
      (container) => container.Name === name,
    ),
  );
  if (!found) throw new Error(`no task definition with a ${name} container`);
  return { id: found[0], properties: found[1].Properties };
}

function environmentOf(container: Record<string, unknown>): Record<string, unknown> {
  const environment = (container.Environment ?? []) as Array<{ Name: string; Value: unknown }>;
  return Object.fromEntries(environment.map(({ Name, Value }) => [Name, Value]));
}

const roleIdOf = (arn: { "Fn::GetAtt": [string, string] }) => arn["Fn::GetAtt"][0];

test("the runner task: Fargate arm64, `keel runner` as the image's node user, its own logs, no sandbox, no secrets", () => {
  const { properties } = taskWithContainer(launched, "runner");
  expect(properties).toMatchObject({
    Family: "keel-dev-runner",
    RequiresCompatibilities: ["FARGATE"],
    NetworkMode: "awsvpc",
    Cpu: "1024",
    Memory: "2048",
    EphemeralStorage: { SizeInGiB: 21 },
    RuntimePlatform: { CpuArchitecture: "ARM64", OperatingSystemFamily: "LINUX" },
  });
  const [container] = properties.ContainerDefinitions;
  expect(container).toMatchObject({
    Name: "runner",
    User: "node",
    Essential: true,
    EntryPoint: ["node", "/app/dist/cli.js", "runner"],
    LogConfiguration: { LogDriver: "awslogs", Options: { "awslogs-stream-prefix": "runner" } },
  });
  // Nothing of the worker's: no Temporal, S3 or provider settings, no secrets injected by ECS.
  expect(environmentOf(container!)).toEqual({ KEEL_SANDBOX: "off", NODE_OPTIONS: "--enable-source-maps" });
  expect(container!.Secrets).toBeUndefined();
  // Its log group is its own, not the workers'.
  const logGroup = (container!.LogConfiguration as { Options: Record<string, unknown> }).Options[
    "awslogs-group"
  ];
  expect(text(logGroup)).toContain("WorkersRunnersLogs");
});

test("the runner's task role has no policy at all; its execution role only writes its logs", () => {
  for (const [, template] of runnersTemplates) {
    const { properties } = taskWithContainer(template, "runner");
    const taskRoleId = roleIdOf(properties.TaskRoleArn);
    expect(roleStatements(template, taskRoleId)).toEqual([]);
    const role = template.findResources("AWS::IAM::Role")[taskRoleId]!;
    expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    expect(role.Properties.Policies).toBeUndefined();
    const executionActions = roleStatements(template, roleIdOf(properties.ExecutionRoleArn)).flatMap(
      actionsOf,
    );
    expect(executionActions.sort()).toEqual(["logs:CreateLogStream", "logs:PutLogEvents"]);
    // Neither role is named in any statement granting S3, Secrets Manager or KMS.
    for (const roleId of [taskRoleId, roleIdOf(properties.ExecutionRoleArn)]) {
      const actions = roleStatements(template, roleId).flatMap(actionsOf);
      expect(actions.filter((action) => /^(s3|secretsmanager|kms|ssm):/.test(action))).toEqual([]);
    }
  }
});

test("the runners' security group only dials out", () => {
  const groups = Object.values(launched.findResources("AWS::EC2::SecurityGroup")).filter(
    (group) => group.Properties.GroupDescription === "Keel launched runners (outbound only)",
  );
  expect(groups).toHaveLength(1);
  expect(groups[0]!.Properties.SecurityGroupIngress).toBeUndefined();
  expect(groups[0]!.Properties.SecurityGroupEgress).toEqual([
    { CidrIp: "0.0.0.0/0", Description: "Allow all outbound traffic by default", IpProtocol: "-1" },
  ]);
  expect(Object.keys(launched.findResources("AWS::EC2::SecurityGroupIngress"))).toEqual([]);
});

test("the workers may run only the runner task in their cluster, manage only its tasks, pass only its roles", () => {
  for (const [mode, template] of runnersTemplates) {
    const runner = taskWithContainer(template, "runner");
    const worker = taskWithContainer(template, "worker");
    const statements = roleStatements(template, roleIdOf(worker.properties.TaskRoleArn));
    const byAction = (action: string) =>
      statements.filter((statement) => actionsOf(statement).includes(action));
    const clusterCondition = {
      ArnEquals: { "ecs:cluster": { "Fn::GetAtt": [expect.stringMatching(/^WorkersCluster/), "Arn"] } },
    };

    const [run, ...moreRuns] = byAction("ecs:RunTask");
    expect({ mode, moreRuns }).toEqual({ mode, moreRuns: [] });
    expect(run).toMatchObject({ Effect: "Allow", Resource: { Ref: runner.id }, Condition: clusterCondition });
    for (const action of ["ecs:StopTask", "ecs:DescribeTasks"]) {
      const [statement, ...others] = byAction(action);
      expect(others).toEqual([]);
      expect(statement?.Condition).toEqual(clusterCondition);
      expect(text(statement?.Resource)).toMatch(/:task\/.*WorkersCluster.*\/\*/);
    }
    expect(byAction("ecs:ListTasks")[0]?.Condition).toEqual(clusterCondition);
    expect(byAction("ecs:TagResource")[0]?.Condition).toEqual({
      StringEquals: { "ecs:CreateAction": "RunTask" },
    });
    const [pass, ...morePasses] = byAction("iam:PassRole");
    expect(morePasses).toEqual([]);
    expect(pass?.Resource).toEqual([
      { "Fn::GetAtt": [roleIdOf(runner.properties.TaskRoleArn), "Arn"] },
      { "Fn::GetAtt": [roleIdOf(runner.properties.ExecutionRoleArn), "Arn"] },
    ]);
    expect(pass?.Condition).toEqual({ StringEquals: { "iam:PassedToService": "ecs-tasks.amazonaws.com" } });
    // Revoking the tokens it issues: their records and index entries, no other object.
    const deletes = byAction("s3:DeleteObject");
    expect(deletes).toHaveLength(1);
    expect(text(deletes[0]?.Resource)).toMatch(
      /"\/keel\/runner-tokens\/\*".*"\/keel\/tenants\/\*\/environments\/\*\/tokens\/\*"/,
    );
    // No ECS or IAM action anywhere with an unscoped resource, but ListTasks (scoped by its condition).
    const wildcards = statements.filter(
      (statement) =>
        statement.Resource === "*" && !actionsOf(statement).every((action) => action === "ecs:ListTasks"),
    );
    expect(wildcards).toEqual([]);
  }
});

test("the worker container is told to launch on Fargate with the runner's task, subnets and security group", () => {
  const worker = taskWithContainer(launched, "worker");
  const env = environmentOf(worker.properties.ContainerDefinitions[0]!);
  const runner = taskWithContainer(launched, "runner");
  expect(env).toMatchObject({
    KEEL_LAUNCHER: "fargate",
    KEEL_LAUNCHER_IDLE_SECONDS: "300",
    KEEL_LAUNCHER_FARGATE_TASK_DEFINITION: { Ref: runner.id },
    KEEL_LAUNCHER_FARGATE_CONTAINER: "runner",
    KEEL_LAUNCHER_FARGATE_ASSIGN_PUBLIC_IP: "false",
  });
  expect(text(env.KEEL_LAUNCHER_API_URL)).toContain("ApiHttpApi");
  expect(text(env.KEEL_LAUNCHER_FARGATE_CLUSTER)).toContain("WorkersCluster");
  expect(text(env.KEEL_LAUNCHER_FARGATE_SUBNETS)).toMatch(
    /WorkersVpcworkersSubnet1.*WorkersVpcworkersSubnet2/,
  );
  expect(text(env.KEEL_LAUNCHER_FARGATE_SECURITY_GROUPS)).toContain("WorkersRunnersSecurityGroup");
});

test("without launchedEnvironments there is no runner task and the workers get no ECS rights", () => {
  expect(() => taskWithContainer(withoutRunners, "runner")).toThrow(/no task definition/);
  const worker = taskWithContainer(withoutRunners, "worker");
  const actions = roleStatements(withoutRunners, roleIdOf(worker.properties.TaskRoleArn)).flatMap(actionsOf);
  expect(actions.filter((action) => /^(ecs|iam):/.test(action) || action === "s3:DeleteObject")).toEqual([]);
  expect(environmentOf(worker.properties.ContainerDefinitions[0]!).KEEL_LAUNCHER).toBeUndefined();
});

test("launchedEnvironments with Lambda workers is refused, naming why", () => {
  const lambda = { ...exampleConfig("example-lambda.json"), launchedEnvironments: {} };
  expect(() => parseInfraConfig(lambda)).toThrow(
    /launchedEnvironments: needs workers.mode "ec2" or "fargate"/,
  );
});
