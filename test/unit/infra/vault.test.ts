/**
 * The tenant secrets' KMS key in the synthesized stack: one rotating key, its ARN as
 * KEEL_VAULT_KMS_KEY_ID on the API and the workers (ECS and Lambda), GenerateDataKey and Decrypt
 * granted to their roles only and only with a `keel:tenant` encryption context; the runners'
 * roles get nothing of it.
 */
import type { Template } from "aws-cdk-lib/assertions";
import { exampleConfig, synthesize } from "./synth";

const ecs = synthesize(exampleConfig("example.json"));
const lambda = synthesize(exampleConfig("example-lambda.json"));

function vaultKeyId(template: Template): string {
  const keys = Object.entries(template.findResources("AWS::KMS::Key")).filter(([, key]) =>
    String(key.Properties.Description).startsWith("Keel tenant secrets"),
  );
  expect(keys).toHaveLength(1);
  const [[id, key]] = keys as [[string, { Properties: { EnableKeyRotation: boolean } }]];
  expect(key.Properties.EnableKeyRotation).toBe(true);
  return id;
}

/** The roles granted the key, as logical ids, with the statement that grants it. */
function grantsOf(template: Template, keyId: string) {
  return Object.values(template.findResources("AWS::IAM::Policy")).flatMap((policy) =>
    (
      policy.Properties.PolicyDocument.Statement as {
        Action: unknown;
        Resource: unknown;
        Condition?: unknown;
      }[]
    )
      .filter((statement) => JSON.stringify(statement.Resource).includes(keyId))
      .map((statement) => ({
        roles: (policy.Properties.Roles as { Ref: string }[]).map((role) => role.Ref),
        statement,
      })),
  );
}

test.each([
  ["ECS", ecs.template],
  ["Lambda", lambda.template],
])(
  "%s: the API and the workers get the key's ARN and its use with a tenant context only",
  (_mode, template) => {
    const keyId = vaultKeyId(template);
    const grants = grantsOf(template, keyId);
    expect(grants.length).toBe(2);
    for (const { roles, statement } of grants) {
      expect(roles).toHaveLength(1);
      expect([...(statement.Action as string[])].sort()).toEqual(["kms:Decrypt", "kms:GenerateDataKey"]);
      expect(statement.Condition).toEqual({ StringLike: { "kms:EncryptionContext:keel:tenant": "*" } });
    }
    const setting = { "Fn::GetAtt": [keyId, "Arn"] };
    const functions = Object.values(template.findResources("AWS::Lambda::Function")).filter(
      (fn) => fn.Properties.Environment?.Variables?.KEEL_S3_BUCKET !== undefined,
    );
    const withKey = functions.filter(
      (fn) =>
        JSON.stringify(fn.Properties.Environment.Variables.KEEL_VAULT_KMS_KEY_ID) === JSON.stringify(setting),
    );
    const containers = Object.values(template.findResources("AWS::ECS::TaskDefinition")).flatMap(
      (task) =>
        task.Properties.ContainerDefinitions as {
          Name: string;
          Environment?: { Name: string; Value: unknown }[];
        }[],
    );
    const containersWithKey = containers.filter((container) =>
      (container.Environment ?? []).some(
        ({ Name, Value }) =>
          Name === "KEEL_VAULT_KMS_KEY_ID" && JSON.stringify(Value) === JSON.stringify(setting),
      ),
    );
    // The API function, and the worker (a Lambda function or the ECS worker container); no runner.
    expect(withKey.length + containersWithKey.length).toBe(2);
    expect(containersWithKey.every((container) => container.Name === "worker")).toBe(true);
  },
);
