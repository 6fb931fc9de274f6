/** KEEL_LAUNCHER and its settings: the launcher a worker starts, or a readable refusal to start. */
import { workerConfigFromEnv } from "../../../src/worker/config";

const BASE = { KEEL_S3_BUCKET: "keel-test", KEEL_LAUNCHER_API_URL: "https://api.keel.example" };
const FARGATE = {
  ...BASE,
  KEEL_LAUNCHER: "fargate",
  KEEL_LAUNCHER_FARGATE_CLUSTER: "keel-dev",
  KEEL_LAUNCHER_FARGATE_TASK_DEFINITION: "keel-dev-runner",
  KEEL_LAUNCHER_FARGATE_SUBNETS: "subnet-0123456789abcdef0, subnet-0fedcba9876543210",
  KEEL_LAUNCHER_FARGATE_SECURITY_GROUPS: "sg-0123456789abcdef0",
};

test("KEEL_LAUNCHER=fargate reads the cluster, task definition, subnets and security groups", () => {
  expect(workerConfigFromEnv({ ...FARGATE, KEEL_LAUNCHER_IDLE_SECONDS: "60" }).launcher).toEqual({
    kind: "fargate",
    apiUrl: "https://api.keel.example",
    idleMs: 60_000,
    cluster: "keel-dev",
    taskDefinition: "keel-dev-runner",
    container: "runner",
    subnets: ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"],
    securityGroups: ["sg-0123456789abcdef0"],
    assignPublicIp: false,
  });
  expect(
    workerConfigFromEnv({ ...FARGATE, KEEL_LAUNCHER_FARGATE_ASSIGN_PUBLIC_IP: "true" }).launcher,
  ).toMatchObject({ assignPublicIp: true });
});

test("KEEL_LAUNCHER=fargate without its settings names every missing one", () => {
  expect(() => workerConfigFromEnv({ ...BASE, KEEL_LAUNCHER: "fargate" })).toThrow(
    "KEEL_LAUNCHER=fargate needs KEEL_LAUNCHER_FARGATE_CLUSTER, KEEL_LAUNCHER_FARGATE_TASK_DEFINITION, KEEL_LAUNCHER_FARGATE_SUBNETS, KEEL_LAUNCHER_FARGATE_SECURITY_GROUPS",
  );
  expect(() => workerConfigFromEnv({ ...FARGATE, KEEL_LAUNCHER_API_URL: undefined })).toThrow(
    /KEEL_LAUNCHER needs KEEL_LAUNCHER_API_URL/,
  );
});

test("malformed subnet and security group ids are refused with the variable's name", () => {
  expect(() =>
    workerConfigFromEnv({ ...FARGATE, KEEL_LAUNCHER_FARGATE_SUBNETS: "sg-0123456789abcdef0" }),
  ).toThrow(/KEEL_LAUNCHER_FARGATE_SUBNETS: must be comma-separated subnet-… ids/);
  expect(() => workerConfigFromEnv({ ...FARGATE, KEEL_LAUNCHER_FARGATE_SECURITY_GROUPS: " , " })).toThrow(
    /KEEL_LAUNCHER_FARGATE_SECURITY_GROUPS: must be comma-separated sg-… ids/,
  );
  expect(() => workerConfigFromEnv({ ...BASE, KEEL_LAUNCHER: "kubernetes" })).toThrow(/KEEL_LAUNCHER/);
});

test("KEEL_LAUNCHER=local needs none of the Fargate settings", () => {
  expect(workerConfigFromEnv({ ...BASE, KEEL_LAUNCHER: "local" }).launcher).toEqual({
    kind: "local",
    apiUrl: "https://api.keel.example",
    idleMs: 300_000,
  });
});
