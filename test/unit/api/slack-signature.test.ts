import { slackSignature, verifySlackSignature } from "../../../src/api/slack/signature";

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
});
