/** `keel run`'s limits: every budget `keel budget` sets can also be given when the run starts. */
import { messageBodySchema } from "../../../src/api/schemas";
import { UsageError } from "../../../src/api-client/client";
import { messageBody } from "../../../src/cli/commands/message";

const API = "http://127.0.0.1:8080";

test("--max-tokens becomes limits.maxTokens, which the API's schema takes", () => {
  const body = messageBody("go", "auto", { "max-tokens": "50000", "max-cost": "0.50" }, API);
  expect(body.limits).toEqual({ maxTokens: 50_000, maxCostUsd: 0.5 });
  const schema = messageBodySchema({ modelIds: [], allowDirectoryWorkspaces: false });
  expect(schema.safeParse(body).success).toBe(true);
});

test("--max-tokens that is not a whole number is a usage error", () => {
  expect(() => messageBody("go", "auto", { "max-tokens": "lots" }, API)).toThrow(UsageError);
  expect(() => messageBody("go", "auto", { "max-tokens": "1.5" }, API)).toThrow(/--max-tokens/);
});

test("--secret, repeatable, becomes the run's secrets (names only, each once), which the API's schema takes", () => {
  const body = messageBody("go", "auto", { secret: ["GITHUB_TOKEN", "NPM_TOKEN", "GITHUB_TOKEN"] }, API);
  expect(body.secrets).toEqual(["GITHUB_TOKEN", "NPM_TOKEN"]);
  const schema = messageBodySchema({ modelIds: [], allowDirectoryWorkspaces: false });
  expect(schema.safeParse(body).success).toBe(true);
  expect(schema.safeParse(messageBody("go", "auto", { secret: ["lower"] }, API)).success).toBe(false);
});
