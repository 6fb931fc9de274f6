/**
 * Publishing a webhook event without a server: a publish whose signal fails leaves its record
 * `failed` (not `pending` with no workflow behind it); retried, it converges (the record is kept,
 * the signal sent again); a record an attempt already wrote is never turned back to `failed`.
 */
import type { Client } from "@temporalio/client";
import type { WebhookEvent } from "../../../src/contracts/webhooks";
import { publishWebhookEvent } from "../../../src/run-client/webhook-publisher";
import type { WebhookDelivery, WebhookStore } from "../../../src/tenants/webhooks";

const event: WebhookEvent = {
  id: "evt_1",
  type: "run.completed",
  timestamp: "2026-01-01T00:00:00.000Z",
  data: { sessionId: "s1" },
};
const retry = { initialIntervalMs: 1000, maximumIntervalMs: 8000, giveUpAfterMs: 86_400_000 };

/** A store holding one endpoint's record, and a client whose signals fail while `down` is set. */
function fakes() {
  const records = new Map<string, WebhookDelivery>();
  const state = { down: true, signals: 0 };
  const store = {
    list: async () => [{ id: "wh_1", url: "https://x", events: ["*"], createdAt: "t", updatedAt: "t" }],
    createDelivery: async (_t: string, _e: WebhookEvent, delivery: WebhookDelivery) => {
      if (!records.has(delivery.endpointId)) records.set(delivery.endpointId, delivery);
    },
    readDelivery: async (_t: string, endpointId: string) => records.get(endpointId),
    recordDelivery: async (_t: string, _e: WebhookEvent, delivery: WebhookDelivery) => {
      records.set(delivery.endpointId, delivery);
    },
  } as unknown as WebhookStore;
  const client = {
    workflow: {
      signalWithStart: async () => {
        if (state.down) throw new Error("Temporal unavailable");
        state.signals += 1;
      },
    },
  } as unknown as Client;
  const publish = () => publishWebhookEvent({ client, store, taskQueue: "q", retry }, "acme", event);
  return { records, state, publish };
}

test("a publish whose signal failed is recorded failed; retried, the same record is kept and the event signalled", async () => {
  const { records, state, publish } = fakes();
  await expect(publish()).rejects.toThrow("Temporal unavailable");
  expect(records.get("wh_1")).toMatchObject({
    status: "failed",
    attempts: 0,
    lastResponse: { error: expect.stringContaining("not handed to its delivery workflow") },
  });
  state.down = false;
  expect(await publish()).toEqual(["wh_1"]);
  expect(state.signals).toBe(1);
  // The record stays one record; the delivery's first attempt rewrites it.
  expect(records.size).toBe(1);
});

test("a record an attempt already wrote is not turned back to failed by a later failed signal", async () => {
  const { records, state, publish } = fakes();
  state.down = false;
  await publish();
  const attempted = {
    ...(records.get("wh_1") as WebhookDelivery),
    status: "delivered" as const,
    attempts: 1,
  };
  records.set("wh_1", attempted);
  state.down = true;
  await expect(publish()).rejects.toThrow();
  expect(records.get("wh_1")).toEqual(attempted);
});
