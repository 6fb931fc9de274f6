import { apiConfigFromEnv } from "../../../src/api/config";
import { DEFAULT_RUN_SETTINGS } from "../../../src/contracts/runs";
import { parseSlackTeams } from "../../../src/tenants/slack-team-tools";
import { decidePolicy } from "../../../src/workflows/policy";

describe("Slack team mapping", () => {
  test("a bare tenant gets the read-only tools; everything else is denied", () => {
    const { T0001: team } = parseSlackTeams('{"T0001":"alpha"}', "test");
    expect(team).toEqual({
      tenantId: "alpha",
      tools: ["read", "grep", "find", "ls"],
      policy: {
        rules: ["read", "grep", "find", "ls"].map((tool) => ({ tool, action: "allow" })),
        default: "deny",
        approvalTimeoutMs: DEFAULT_RUN_SETTINGS.policy.approvalTimeoutMs,
      },
    });
    expect(decidePolicy(team!.policy, "bash", "{}")).toBe("deny");
    expect(decidePolicy(team!.policy, "write", "{}")).toBe("deny");
    expect(decidePolicy(team!.policy, "read", "{}")).toBe("allow");
  });

  test("allow and ask lists set the offered tools and the policy", () => {
    const { T0002: team } = parseSlackTeams(
      '{"T0002":{"tenant":"beta","allow":["read"],"ask":["edit","bash"]}}',
      "test",
    );
    expect(team!.tools).toEqual(["read", "edit", "bash"]);
    expect(decidePolicy(team!.policy, "bash", "{}")).toBe("ask");
    expect(decidePolicy(team!.policy, "write", "{}")).toBe("deny");
  });

  test("invalid mappings are refused at start, naming the problem", () => {
    const refused = (text: string) => () => parseSlackTeams(text, "KEEL_SLACK_TEAMS");
    expect(refused("{")).toThrow(/KEEL_SLACK_TEAMS: not JSON/);
    expect(refused("{}")).toThrow(/at least one Slack team/);
    expect(refused('{"acme":"alpha"}')).toThrow(/Slack team ids look like T0123ABCD/);
    expect(refused('{"T0001":"../alpha"}')).toThrow(/T0001/);
    expect(refused('{"T0001":{"tenant":"alpha","allow":["sudo"]}}')).toThrow(/T0001\.allow/);
    expect(refused('{"T0001":{"tenant":"alpha","allow":["bash"],"ask":["bash"]}}')).toThrow(
      /both allow and ask/,
    );
    expect(refused('{"T0001":{"tenant":"alpha","deny":["bash"]}}')).toThrow(/T0001/);
  });

  test("a single-tenant API refuses a mapping to any other tenant", () => {
    const env = {
      KEEL_S3_BUCKET: "bucket",
      KEEL_SLACK_SIGNING_SECRET: "s",
      KEEL_SINGLE_TENANT: "alpha",
    };
    expect(() => apiConfigFromEnv({ ...env, KEEL_SLACK_TEAMS: '{"T0001":"alpha","T0002":"beta"}' })).toThrow(
      /KEEL_SINGLE_TENANT is alpha, but KEEL_SLACK_TEAMS maps T0002 to another tenant/,
    );
    expect(
      apiConfigFromEnv({ ...env, KEEL_SLACK_TEAMS: '{"T0001":"alpha"}' }).slack?.teams.T0001?.tenantId,
    ).toBe("alpha");
  });
});
