/**
 * Tenant settings narrow what the operator allows: model patterns, one-line hosts within the
 * operator's, and an operator key that can never be a tenant's.
 */
import { createHash } from "node:crypto";
import { apiConfigFromEnv } from "../../../src/api/config";
import { ModelUrlPolicy, parseModelUrls } from "../../../src/providers/model-urls";
import { hostsBeyondOperator, matchesPattern, modelRefusal } from "../../../src/tenants/settings";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

test("patterns match literally except `*`", () => {
  expect(matchesPattern("local-*", "local-chat")).toBe(true);
  expect(matchesPattern("local-*", "gpt-5")).toBe(false);
  expect(matchesPattern("gpt-4.1", "gpt-441")).toBe(false);
  expect(matchesPattern("openai-compatible:*", "openai-compatible:m@http://h/v1")).toBe(true);
});

test("a model outside `models`, or a one-line host outside `modelHosts`, is refused naming the setting", () => {
  const settings = {
    models: ["openai-compatible:*", "local-chat"],
    modelHosts: ["http://allowed.example/v1"],
  };
  expect(modelRefusal(settings, "local-chat")).toBeUndefined();
  expect(modelRefusal(settings, "gpt-5")?.setting).toBe("models");
  expect(modelRefusal(settings, "openai-compatible:m@http://allowed.example/v1")).toBeUndefined();
  expect(modelRefusal(settings, "openai-compatible:m@http://allowed.example/v1/deeper")).toBeUndefined();
  expect(modelRefusal(settings, "openai-compatible:m@http://other.example/v1")?.setting).toBe("modelHosts");
  // The same host on another port or path is another place.
  expect(modelRefusal(settings, "openai-compatible:m@http://allowed.example:8080/v1")?.setting).toBe(
    "modelHosts",
  );
  expect(modelRefusal({}, "anything")).toBeUndefined();
});

test("`modelHosts` may only list what the operator allows one-line models to name", () => {
  const policy = new ModelUrlPolicy({
    allowlist: parseModelUrls("http://models.internal/v1"),
    configured: {},
  });
  expect(
    hostsBeyondOperator(["http://models.internal/v1", "http://models.internal/v1/team"], policy),
  ).toEqual([]);
  expect(hostsBeyondOperator(["http://169.254.169.254/v1", "not a url"], policy)).toEqual([
    "http://169.254.169.254/v1",
    "not a url",
  ]);
});

test("the operator's key digests are checked, and one that is a tenant's key is refused", () => {
  const base = {
    KEEL_S3_BUCKET: "bucket",
    KEEL_API_KEYS: JSON.stringify({ [sha256("tenant-key")]: "acme" }),
  };
  expect(apiConfigFromEnv({ ...base, KEEL_ADMIN_KEY_SHA256: sha256("admin") }).adminKeyDigests).toEqual([
    sha256("admin"),
  ]);
  expect(() => apiConfigFromEnv({ ...base, KEEL_ADMIN_KEY_SHA256: "admin" })).toThrow(/sha256/);
  expect(() => apiConfigFromEnv({ ...base, KEEL_ADMIN_KEY_SHA256: sha256("tenant-key") })).toThrow(
    /tenant's API key/,
  );
});
