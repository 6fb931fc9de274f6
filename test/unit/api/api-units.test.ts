import { createHash } from "node:crypto";
import { allowedMethods } from "../../../src/api/allowed-methods";
import { tenantOfKey } from "../../../src/api/auth";
import { apiConfigFromEnv, parseApiKeys } from "../../../src/api/config";
import { problemDocument } from "../../../src/api/problems";
import { runSettingsFrom } from "../../../src/api/run-settings";
import { messageBodySchema } from "../../../src/api/schemas";
import { isTemporalClientError } from "../../../src/api/server";
import { slackSignature, verifySlackSignature } from "../../../src/api/slack/signature";
import { parseSlackTeams } from "../../../src/api/slack/teams";
import { slackSessionId } from "../../../src/api/slack/threads";
import { isConnectionFailure, TemporalConnectError } from "../../../src/api/temporal";
import { unavailableDependency } from "../../../src/api/unavailable";
import { loadCatalog } from "../../../src/providers/models";
import { RunNotAnsweringError } from "../../../src/run-client/session-runs";
import { decidePolicy } from "../../../src/workflows/policy";
import { DEFAULT_RUN_SETTINGS } from "../../../src/workflows/types";

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

  test("the environment gives a complete config; Slack needs its team mapping", () => {
    const base = { KEEL_S3_BUCKET: "bucket", KEEL_API_KEYS: JSON.stringify(keys) };
    const config = apiConfigFromEnv(base);
    expect(config).toMatchObject({ apiKeys: keys, taskQueue: "keel", allowDirectoryWorkspaces: false });
    expect(config.slack).toBeUndefined();
    const slack = { ...base, KEEL_SLACK_SIGNING_SECRET: "s" };
    expect(() => apiConfigFromEnv(slack)).toThrow(/KEEL_SLACK_TEAMS .* is required/);
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

describe("Slack signatures", () => {
  const nowMs = 1_700_000_000_000;
  const timestamp = String(nowMs / 1000);
  const body = '{"type":"url_verification"}';
  const check = (overrides: Partial<Parameters<typeof verifySlackSignature>[0]>) =>
    verifySlackSignature({
      signingSecret: "secret",
      timestamp,
      signature: slackSignature("secret", timestamp, body),
      body,
      nowMs,
      ...overrides,
    });

  test("Slack's documented example signature verifies", () => {
    // From Slack's "Verifying requests from Slack" guide.
    const exampleBody =
      "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    expect(slackSignature("8f742231b10e8888abcd99yyyzzz85a5", "1531420618", exampleBody)).toBe(
      "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
    );
  });

  test("valid, wrong secret, tampered body, stale or future timestamp, missing headers", () => {
    expect(check({})).toEqual({ ok: true });
    expect(check({ signingSecret: "other" })).toEqual({ ok: false, reason: "bad-signature" });
    expect(check({ body: `${body} ` })).toEqual({ ok: false, reason: "bad-signature" });
    expect(check({ nowMs: nowMs + 301_000 })).toEqual({ ok: false, reason: "stale-timestamp" });
    expect(check({ nowMs: nowMs - 301_000 })).toEqual({ ok: false, reason: "stale-timestamp" });
    expect(check({ nowMs: nowMs + 299_000 })).toEqual({ ok: true });
    expect(check({ timestamp: "12e3" })).toEqual({ ok: false, reason: "stale-timestamp" });
    expect(check({ signature: undefined })).toEqual({ ok: false, reason: "missing-headers" });
    expect(check({ timestamp: undefined })).toEqual({ ok: false, reason: "missing-headers" });
    expect(check({ signature: "v0=short" })).toEqual({ ok: false, reason: "bad-signature" });
  });

  test("a thread's session id is deterministic, distinct per thread and a valid session id", () => {
    const thread = { teamId: "T1", channel: "C1", threadTs: "1700000000.000100" };
    expect(slackSessionId(thread)).toBe(slackSessionId({ ...thread }));
    expect(slackSessionId(thread)).not.toBe(slackSessionId({ ...thread, threadTs: "1700000000.000200" }));
    expect(slackSessionId(thread)).toMatch(/^slack-[0-9a-f]{32}$/);
  });
});

describe("run settings from a message body", () => {
  const modelIds = loadCatalog()
    .list()
    .map((model) => model.id);
  const schemaFor = (allowDirectoryWorkspaces: boolean) =>
    messageBodySchema({ modelIds, allowDirectoryWorkspaces });
  const MessageBodySchema = schemaFor(false);
  const settingsOf = (body: unknown, allowDirectoryWorkspaces = false) =>
    runSettingsFrom(schemaFor(allowDirectoryWorkspaces).parse(body));

  test("defaults, then the caller's choices", () => {
    expect(settingsOf({ text: "x" })).toEqual(DEFAULT_RUN_SETTINGS);
    const settings = settingsOf({
      text: "x",
      model: "local-chat",
      systemPrompt: "be brief",
      tools: ["read", "read", "ls"],
      policy: { rules: [{ tool: "bash", argumentsPattern: "rm ", action: "deny" }], default: "ask" },
      workspace: { type: "git", url: "https://github.com/example/repo.git", ref: "main" },
    });
    expect(settings).toMatchObject({
      model: "local-chat",
      systemPrompt: "be brief",
      tools: ["read", "ls"],
      policy: { rules: [{ tool: "bash", argumentsPattern: "rm ", action: "deny" }], default: "ask" },
      workspace: { type: "git", url: "https://github.com/example/repo.git", ref: "main" },
    });
    expect(settings.policy.approvalTimeoutMs).toBe(DEFAULT_RUN_SETTINGS.policy.approvalTimeoutMs);
  });

  test("unknown models and worker-disk workspaces are refused unless enabled", () => {
    expect(() => settingsOf({ text: "x", model: "nope" })).toThrow(/model/);
    expect(() => settingsOf({ text: "x", workspace: { type: "directory", path: "/srv" } })).toThrow(
      /directory|type/,
    );
    expect(() => settingsOf({ text: "x", workspace: { type: "git", url: "/srv/repo" } })).toThrow(
      /must be https:\/\/ URLs/,
    );
    expect(settingsOf({ text: "x", workspace: { type: "git", url: "/srv/repo" } }, true).workspace).toEqual({
      type: "git",
      url: "/srv/repo",
    });
    expect(settingsOf({ text: "x", workspace: { type: "directory", path: "/srv" } }, true).workspace).toEqual(
      {
        type: "directory",
        path: "/srv",
      },
    );
  });

  test("network: none, full and host allowlists are kept; addresses and malformed hosts are refused", () => {
    expect(settingsOf({ text: "x" }).network).toBeUndefined();
    expect(settingsOf({ text: "x", network: "none" }).network).toBe("none");
    // "full" is in the document only where the deployment offers it to some tenant.
    expect(MessageBodySchema.safeParse({ text: "x", network: "full" }).success).toBe(false);
    const offered = messageBodySchema({
      modelIds,
      allowDirectoryWorkspaces: false,
      fullNetworkOffered: true,
    });
    expect(runSettingsFrom(offered.parse({ text: "x", network: "full" })).network).toBe("full");
    const allow = ["registry.npmjs.org", "*.pypi.org", "git.example.com:8443"];
    expect(settingsOf({ text: "x", network: { allow } }).network).toEqual({ allow });
    for (const bad of [
      ["a b"],
      ["169.254.169.254"],
      ["localhost"],
      [],
      ["x.com"].concat(Array(50).fill("y.com")),
    ])
      expect(MessageBodySchema.safeParse({ text: "x", network: { allow: bad } }).success).toBe(false);
    expect(MessageBodySchema.safeParse({ text: "x", network: "some" }).success).toBe(false);
    expect(MessageBodySchema.safeParse({ text: "x", network: { allow: allow, extra: 1 } }).success).toBe(
      false,
    );
  });

  test("the schema refuses bad regexes, unknown tools and option-like git arguments", () => {
    const invalid = [
      { text: "x", policy: { rules: [{ tool: "bash", argumentsPattern: "(", action: "ask" }] } },
      { text: "x", tools: ["rm"] },
      { text: "x", workspace: { type: "git", url: "--upload-pack=evil" } },
      { text: "x", workspace: { type: "git", url: "https://e.com/r", ref: "-x" } },
      { text: "" },
    ];
    for (const body of invalid) expect(MessageBodySchema.safeParse(body).success).toBe(false);
  });
});

test("problem documents carry a stable type URI, the title and the status", () => {
  expect(problemDocument("queue-full", "wait")).toEqual({
    type: "https://keel.dev/problems/queue-full",
    title: "The session's message queue is full",
    status: 429,
    detail: "wait",
  });
});

test("connection failures are told apart from request failures", () => {
  expect(isConnectionFailure({ code: 14, details: "unavailable" })).toBe(true);
  expect(isConnectionFailure(new Error("x", { cause: { code: 14 } }))).toBe(true);
  expect(isConnectionFailure({ code: 5 })).toBe(false);
  expect(isConnectionFailure(new Error("plain"))).toBe(false);
});

test("the safety net keeps serving only for errors of the Temporal client's own machinery", () => {
  expect(isTemporalClientError(new Error("Channel has been shut down"))).toBe(true);
  const fromRetryTimer = new Error("14 UNAVAILABLE");
  fromRetryTimer.stack = `Error: 14 UNAVAILABLE\n    at Timeout._onTimeout (/app/node_modules/@grpc/grpc-js/build/src/client.js:1:1)`;
  expect(isTemporalClientError(fromRetryTimer)).toBe(true);
  expect(isTemporalClientError(new TypeError("cannot read properties of undefined"))).toBe(false);
  expect(isTemporalClientError("Channel has been shut down")).toBe(false);
});

test("unreachable dependencies are named; request errors are not", () => {
  const s3Answer = (status: number, name: string) =>
    Object.assign(new Error(name), { name, $metadata: { httpStatusCode: status } });
  expect(
    unavailableDependency(new TemporalConnectError("127.0.0.1:1", { cause: new Error("deadline") })),
  ).toBe("temporal");
  expect(unavailableDependency({ code: 4 })).toBe("temporal");
  expect(unavailableDependency(s3Answer(503, "SlowDown"))).toBe("storage");
  expect(unavailableDependency(s3Answer(500, "InternalError"))).toBe("storage");
  expect(
    unavailableDependency(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })),
  ).toBe("storage");
  expect(unavailableDependency(s3Answer(412, "PreconditionFailed"))).toBeUndefined();
  expect(unavailableDependency(s3Answer(403, "AccessDenied"))).toBeUndefined();
  expect(unavailableDependency(new TypeError("bug"))).toBeUndefined();
});

test("allowed methods: pattern routes match by segment, literal routes win, middleware does not count", () => {
  const routes = [
    { method: "ALL", path: "/v1/sessions/*" },
    { method: "GET", path: "/v1/sessions/:sessionId" },
    { method: "POST", path: "/v1/sessions/:sessionId/messages" },
    { method: "POST", path: "/v1/sessions/import" },
  ];
  expect(allowedMethods(routes, "/v1/sessions/s1")).toEqual(["GET"]);
  expect(allowedMethods(routes, "/v1/sessions/import")).toEqual(["POST"]);
  expect(allowedMethods(routes, "/v1/sessions/s1/messages")).toEqual(["POST"]);
  expect(allowedMethods(routes, "/v1/sessions/s1/other")).toEqual([]);
  expect(allowedMethods(routes, "/v1/sessions/")).toEqual([]);
});

test("an open run that does not answer says why; it is not Temporal being unreachable", () => {
  const error = new RunNotAnsweringError(
    "run-1",
    { cause: new Error("query timed out") },
    "no worker is polling",
  );
  expect(error.message).toBe("run run-1 is not answering right now: no worker is polling");
  expect(unavailableDependency(error)).toBeUndefined();
  expect(unavailableDependency(new Error("something else"))).toBeUndefined();
});
