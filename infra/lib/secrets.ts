/**
 * Secrets Manager secrets the components read, imported by ARN from the config. ECS injects a
 * secret straight into the container's environment; a Lambda function gets `<NAME>_SECRET_ARN`
 * and resolves it at cold start (see docs/deploy.md, "Secrets").
 */
import * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import type { Construct } from "constructs";
import type { KeelInfraConfig } from "./config";

/** Suffix of the variable naming a secret's ARN; the runtime sets `<NAME>` from it. */
const SECRET_ARN_SUFFIX = "_SECRET_ARN";

/** A secret and the environment variable its value belongs in. */
export interface SecretBinding {
  envName: string;
  secret: secretsmanager.ISecret;
}

export interface KeelSecrets {
  /** What workers need: the Temporal API key and the provider keys. */
  worker: SecretBinding[];
  /** What the API needs: the Temporal API key and the API key map. */
  api: SecretBinding[];
}

export function importKeelSecrets(scope: Construct, config: KeelInfraConfig): KeelSecrets {
  const bind = (envName: string, arn: string | undefined): SecretBinding[] =>
    arn
      ? [{ envName, secret: secretsmanager.Secret.fromSecretCompleteArn(scope, `Secret${envName}`, arn) }]
      : [];
  const temporal = bind("KEEL_TEMPORAL_API_KEY", config.temporal.apiKeySecretArn);
  return {
    worker: [
      ...temporal,
      ...bind("OPENAI_API_KEY", config.providers.openaiApiKeySecretArn),
      ...bind("ANTHROPIC_API_KEY", config.providers.anthropicApiKeySecretArn),
    ],
    api: [...temporal, ...bind("KEEL_API_KEYS", config.api.apiKeysSecretArn)],
  };
}

/** `<NAME>_SECRET_ARN` variables for a Lambda function. */
export function secretArnEnvironment(bindings: SecretBinding[]): Record<string, string> {
  return Object.fromEntries(
    bindings.map((binding) => [`${binding.envName}${SECRET_ARN_SUFFIX}`, binding.secret.secretArn]),
  );
}
