/**
 * Slack request signatures: `X-Slack-Signature: v0=<hex HMAC-SHA256 of "v0:{timestamp}:{body}">`
 * keyed with the app's signing secret, `X-Slack-Request-Timestamp` in epoch seconds. Requests
 * older (or newer) than five minutes are refused, so a captured request cannot be replayed later.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

export const SLACK_SIGNATURE_HEADER = "x-slack-signature";
export const SLACK_TIMESTAMP_HEADER = "x-slack-request-timestamp";
/** Slack's recommended replay window. */
const SLACK_MAX_CLOCK_SKEW_SECONDS = 5 * 60;

export type SignatureCheck =
  | { ok: true }
  | { ok: false; reason: "missing-headers" | "stale-timestamp" | "bad-signature" };

export function slackSignature(signingSecret: string, timestamp: string, body: string): string {
  return `v0=${createHmac("sha256", signingSecret).update(`v0:${timestamp}:${body}`).digest("hex")}`;
}

/** Checks a request's signature. Never throws. */
export function verifySlackSignature(input: {
  signingSecret: string;
  timestamp: string | undefined;
  signature: string | undefined;
  body: string;
  nowMs: number;
}): SignatureCheck {
  const { timestamp, signature } = input;
  if (!timestamp || !signature) return { ok: false, reason: "missing-headers" };
  if (!/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: "stale-timestamp" };
  if (Math.abs(input.nowMs / 1000 - Number(timestamp)) > SLACK_MAX_CLOCK_SKEW_SECONDS) {
    return { ok: false, reason: "stale-timestamp" };
  }
  const expected = Buffer.from(slackSignature(input.signingSecret, timestamp, input.body));
  const presented = Buffer.from(signature);
  if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
    return { ok: false, reason: "bad-signature" };
  }
  return { ok: true };
}
