import { createHash } from "node:crypto";
import { tenantOfKey } from "../../../src/api/auth";
import { apiConfigFromEnv, parseApiKeys } from "../../../src/api/config";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

describe("API keys", () => {
  const keys = { [sha256("alpha-key")]: "alpha", [sha256("beta-key")]: "beta" };

  test("a key maps to its tenant; unknown keys to nothing", () => {
    expect(tenantOfKey(keys, "alpha-key")).toBe("alpha");
    expect(tenantOfKey(keys, "beta-key")).toBe("beta");
    expect(tenantOfKey(keys, sha256("alpha-key"))).toBeUndefined();
    expect(tenantOfKey(keys, "")).toBeUndefined();
  });

  test("configuration accepts only sha256 digests and valid tenant ids, and never echoes the text", () => {
    expect(parseApiKeys(JSON.stringify(keys), "test")).toEqual(keys);
    expect(() => parseApiKeys('{"plain-secret-key": "alpha"}', "KEEL_API_KEYS")).toThrow(/sha256/);
    expect(() => parseApiKeys(`{"${sha256("x")}": "../etc"}`, "KEEL_API_KEYS")).toThrow(/tenant/);
    expect(() => parseApiKeys("{plain-secret-key", "KEEL_API_KEYS")).toThrow(/^((?!plain-secret-key).)*$/);
  });

  test("the environment gives a complete config; Slack's team mapping may come from tenant settings", () => {
    const base = { KEEL_S3_BUCKET: "bucket", KEEL_API_KEYS: JSON.stringify(keys) };
    const config = apiConfigFromEnv(base);
    expect(config).toMatchObject({ apiKeys: keys, taskQueue: "keel", allowDirectoryWorkspaces: false });
    expect(config.slack).toBeUndefined();
    const slack = { ...base, KEEL_SLACK_SIGNING_SECRET: "s" };
    // Without an operator mapping, teams come from tenant settings only (the admin API).
    expect(apiConfigFromEnv(slack).slack).toMatchObject({ teams: {} });
    // The single tenant of old is refused with the way forward, never silently used for every team.
    expect(() => apiConfigFromEnv({ ...slack, KEEL_SLACK_TENANT: "alpha" })).toThrow(
      /KEEL_SLACK_TENANT is replaced by KEEL_SLACK_TEAMS/,
    );
    expect(apiConfigFromEnv({ ...slack, KEEL_SLACK_TEAMS: '{"T0001":"alpha"}' }).slack).toMatchObject({
      teams: { T0001: { tenantId: "alpha", tools: ["read", "grep", "find", "ls"] } },
      stopWord: "stop",
    });
    expect(() => apiConfigFromEnv({ ...base, KEEL_API_BODY_LIMIT_BYTES: "-1" })).toThrow(
      /KEEL_API_BODY_LIMIT_BYTES/,
    );
  });
});
