/**
 * The webhook request's form (integrations/webhook-sender.ts): the signature header carries one
 * `v1,` signature per live secret that the Standard Webhooks library verifies with either; URLs
 * are https only, and IP literals of loopback, link-local (metadata) and private ranges are
 * refused unless the operator listed the host. (The signed request end to end, against the
 * Python reference verifier: test/integration/api/webhooks.test.ts.)
 */
import { Webhook } from "standardwebhooks";
import {
  attemptRequestTimeoutMs,
  HOST_NOT_PUBLIC,
  signatureHeader,
  webhookUrlRefusal,
} from "../../../src/integrations/webhook-sender";
import { newSigningSecret } from "../../../src/tenants/webhooks";

test("during an overlap the signature header verifies with the old secret and with the new one; a stranger's fails", () => {
  const [fresh, old, stranger] = [newSigningSecret(), newSigningSecret(), newSigningSecret()];
  const at = new Date();
  const body = JSON.stringify({ id: "evt_1", type: "run.completed" });
  const header = signatureHeader([fresh, old], "evt_1", at, body);
  expect(header.split(" ")).toHaveLength(2);
  const headers = {
    "webhook-id": "evt_1",
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": header,
  };
  expect(() => new Webhook(fresh).verify(body, headers)).not.toThrow();
  expect(() => new Webhook(old).verify(body, headers)).not.toThrow();
  expect(() => new Webhook(stranger).verify(body, headers)).toThrow();
  expect(() => new Webhook(fresh).verify(`${body} `, headers)).toThrow();
});

test("endpoint URLs: https only; loopback, metadata and private literals refused unless the operator lists the host", async () => {
  for (const url of [
    "https://127.0.0.1/x",
    "https://169.254.169.254/latest",
    "https://10.0.0.5/x",
    "https://[::1]/x",
    "https://[::ffff:169.254.169.254]/x",
    "http://example.com/x",
    "ftp://example.com/x",
    "https://user:pass@example.com/x",
    "not a url",
  ])
    expect([url, await webhookUrlRefusal(url, [])]).toEqual([url, expect.any(String)]);
  const logged: string[] = [];
  expect(await webhookUrlRefusal("https://10.0.0.5/x", [], (detail) => logged.push(detail))).toBe(
    HOST_NOT_PUBLIC,
  );
  expect(logged).toEqual([expect.stringContaining("10.0.0.5")]);
  expect(await webhookUrlRefusal("https://8.8.8.8/x", [])).toBeUndefined();
  expect(await webhookUrlRefusal("http://127.0.0.1:9/x", ["127.0.0.1"])).toBeUndefined();
});

test("an attempt's request never outlives the attempt's start-to-close timeout less the overhead", () => {
  const retry = { initialIntervalMs: 1000, maximumIntervalMs: 8000, giveUpAfterMs: 86_400_000 };
  // The publisher's timeout was 3 s (attempt 8 s); a worker whose own is 15 s waits 3 s at most.
  expect(attemptRequestTimeoutMs(15_000, { ...retry, attemptTimeoutMs: 8_000 })).toBe(3_000);
  expect(attemptRequestTimeoutMs(2_000, { ...retry, attemptTimeoutMs: 8_000 })).toBe(2_000);
  // An input from before the attempt timeout travelled: the workflow's 2 minutes.
  expect(attemptRequestTimeoutMs(300_000, retry)).toBe(115_000);
});
