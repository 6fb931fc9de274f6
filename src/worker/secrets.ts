/**
 * Secrets for Lambda functions (API and serverless workers): every `NAME_SECRET_ARN` variable is
 * resolved into `NAME` at cold start through the AWS Parameters and Secrets Lambda extension.
 * Values are never logged.
 */
import { z } from "zod";
import { SECRET_ARN_SUFFIX } from "../core/env-settings";

/** The Parameters and Secrets extension's default port. */
const SECRETS_EXTENSION_DEFAULT_PORT = 2773;

const ExtensionResponseSchema = z.object({ SecretString: z.string() });

/**
 * Sets `NAME` from every `NAME_SECRET_ARN` in `env` (unless `NAME` is already set), fetching each
 * secret from the Parameters and Secrets Lambda extension on localhost. Throws naming the variable
 * (never the value) when a secret cannot be read.
 */
export async function resolveSecretEnv(
  env: NodeJS.ProcessEnv,
  fetchImpl: typeof fetch = fetch,
): Promise<void> {
  const port = Number(env.PARAMETERS_SECRETS_EXTENSION_HTTP_PORT ?? SECRETS_EXTENSION_DEFAULT_PORT);
  const pending = Object.entries(env).flatMap(([name, arn]) => {
    if (!name.endsWith(SECRET_ARN_SUFFIX) || !arn) return [];
    const target = name.slice(0, -SECRET_ARN_SUFFIX.length);
    return env[target] ? [] : [{ target, arn }];
  });
  await Promise.all(
    pending.map(async ({ target, arn }) => {
      const url = `http://localhost:${port}/secretsmanager/get?secretId=${encodeURIComponent(arn)}`;
      const response = await fetchImpl(url, {
        headers: { "X-Aws-Parameters-Secrets-Token": env.AWS_SESSION_TOKEN ?? "" },
      });
      if (!response.ok) throw new Error(`Cannot read the secret for ${target}: HTTP ${response.status}`);
      const parsed = ExtensionResponseSchema.safeParse(await response.json());
      if (!parsed.success) throw new Error(`The secret for ${target} has no SecretString`);
      env[target] = parsed.data.SecretString;
    }),
  );
}
