/** Synthesizes the Keel stack from the example configs for assertion tests. */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { App } from "aws-cdk-lib";
import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import * as ecs from "aws-cdk-lib/aws-ecs";
import { type KeelInfraConfig, parseInfraConfig } from "../../../infra/lib/config";
import { KeelStack } from "../../../infra/lib/keel-stack";

const CONFIG_DIR = resolve(__dirname, "../../../infra/config");

export function exampleConfig(
  name: "example.json" | "example-fargate.json" | "example-lambda.json",
): KeelInfraConfig {
  return parseInfraConfig(JSON.parse(readFileSync(join(CONFIG_DIR, name), "utf8")));
}

export interface Synthesized {
  stack: KeelStack;
  template: Template;
  assemblyDir: string;
}

/**
 * The stack as `cdk synth` builds it (local esbuild bundling included). The ECS image comes from a
 * registry so no Docker context is staged; `lambdaRuntimeFiles` also runs the Lambda worker's
 * workflow bundling and module copy.
 */
export function synthesize(
  config: KeelInfraConfig,
  options: { lambdaRuntimeFiles?: boolean } = {},
): Synthesized {
  const app = new App();
  const stack = new KeelStack(app, `keel-${config.environment}`, {
    config,
    workerImage: ecs.ContainerImage.fromRegistry("public.ecr.aws/docker/library/node:20-slim"),
    skipLambdaRuntimeFiles: !options.lambdaRuntimeFiles,
  });
  const assembly = app.synth();
  // What `cdk synth --strict` would refuse: any error or warning annotation.
  const annotations = Annotations.fromStack(stack);
  annotations.hasNoError("*", Match.anyValue());
  annotations.hasNoWarning("*", Match.anyValue());
  return { stack, template: Template.fromStack(stack), assemblyDir: assembly.directory };
}

interface PolicyStatement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: unknown;
}

/** Every statement of the inline policies attached to the role with this logical id. */
export function roleStatements(template: Template, roleLogicalId: string): PolicyStatement[] {
  const policies = template.findResources("AWS::IAM::Policy");
  return Object.values(policies).flatMap((policy) => {
    const roles = (policy.Properties.Roles ?? []) as Array<{ Ref?: string }>;
    if (!roles.some((role) => role.Ref === roleLogicalId)) return [];
    return policy.Properties.PolicyDocument.Statement as PolicyStatement[];
  });
}

export function actionsOf(statement: PolicyStatement): string[] {
  return Array.isArray(statement.Action) ? statement.Action : [statement.Action];
}

/** The logical id of the execution role of the function whose logical id starts with `prefix`. */
export function functionRole(template: Template, prefix: string): { functionId: string; roleId: string } {
  const functions = template.findResources("AWS::Lambda::Function");
  const functionId = Object.keys(functions).find((id) => id.startsWith(prefix));
  if (!functionId) throw new Error(`no function ${prefix}* in ${Object.keys(functions).join(", ")}`);
  const role = functions[functionId]!.Properties.Role as { "Fn::GetAtt": [string, string] };
  return { functionId, roleId: role["Fn::GetAtt"][0] };
}

/** JSON text of a value, for checking which ARN fragments a resource expression names. */
export function text(value: unknown): string {
  return JSON.stringify(value);
}
