import { resolveSecretEnv } from "../../../src/worker/secrets";

function fakeExtension(values: Record<string, string>, seen: Array<{ url: string; token: string | null }>) {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = String(input);
    seen.push({ url, token: new Headers(init?.headers).get("X-Aws-Parameters-Secrets-Token") });
    const id = new URL(url).searchParams.get("secretId") ?? "";
    const value = values[id];
    return value === undefined
      ? new Response("not found", { status: 400 })
      : Response.json({ ARN: id, SecretString: value });
  }) as typeof fetch;
}

const TEMPORAL_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:keel/temporal-AbCdEf";
const OPENAI_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:keel/openai-AbCdEf";

test("each NAME_SECRET_ARN sets NAME from the extension, with the session token", async () => {
  const env: NodeJS.ProcessEnv = {
    AWS_SESSION_TOKEN: "session-token",
    PARAMETERS_SECRETS_EXTENSION_HTTP_PORT: "2999",
    KEEL_TEMPORAL_API_KEY_SECRET_ARN: TEMPORAL_ARN,
    OPENAI_API_KEY_SECRET_ARN: OPENAI_ARN,
    KEEL_TASK_QUEUE: "keel",
  };
  const seen: Array<{ url: string; token: string | null }> = [];
  await resolveSecretEnv(
    env,
    fakeExtension({ [TEMPORAL_ARN]: "temporal-key", [OPENAI_ARN]: "openai-key" }, seen),
  );
  expect(env.KEEL_TEMPORAL_API_KEY).toBe("temporal-key");
  expect(env.OPENAI_API_KEY).toBe("openai-key");
  expect(seen).toHaveLength(2);
  for (const request of seen) {
    expect(request.url).toMatch(/^http:\/\/localhost:2999\/secretsmanager\/get\?secretId=arn%3Aaws/);
    expect(request.token).toBe("session-token");
  }
});

test("a variable that is already set is kept; nothing is fetched for it", async () => {
  const env: NodeJS.ProcessEnv = { OPENAI_API_KEY: "given", OPENAI_API_KEY_SECRET_ARN: OPENAI_ARN };
  const seen: Array<{ url: string; token: string | null }> = [];
  await resolveSecretEnv(env, fakeExtension({}, seen));
  expect(env.OPENAI_API_KEY).toBe("given");
  expect(seen).toEqual([]);
});

test("an unreadable secret fails naming the variable, not the value", async () => {
  const env: NodeJS.ProcessEnv = { KEEL_TEMPORAL_API_KEY_SECRET_ARN: TEMPORAL_ARN };
  await expect(resolveSecretEnv(env, fakeExtension({}, []))).rejects.toThrow(
    "Cannot read the secret for KEEL_TEMPORAL_API_KEY: HTTP 400",
  );
  expect(env.KEEL_TEMPORAL_API_KEY).toBeUndefined();
});
