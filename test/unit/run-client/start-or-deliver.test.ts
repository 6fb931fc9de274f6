/**
 * The one start path without a server: what an admitted start's quota slot becomes (kept and the
 * run counted when it started; given back when the message went to a live run, was refused or
 * failed), refusals as typed outcomes, and how each caller maps an outcome — the API to a problem,
 * Slack to a thread reply, a schedule's firing to its result or failure.
 */
import { ApplicationFailure, WorkflowNotFoundError } from "@temporalio/common";
import { firingStartOf } from "../../../src/activities/scheduled-runs";
import { slackRefusalText } from "../../../src/api/slack/events";
import { refusalProblem } from "../../../src/api/tenant-runs";
import { DEFAULT_RUN_SETTINGS } from "../../../src/contracts/runs";
import { type Delivered, DeliveryRefusedError } from "../../../src/run-client/delivery";
import type { RunClient } from "../../../src/run-client/run-client";
import {
  type DeliveryRefusalType,
  type MessageOutcome,
  type MessageRefusal,
  type StartServices,
  startOrDeliver,
} from "../../../src/run-client/start-or-deliver";
import { QuotaExceededError, type QuotaGate } from "../../../src/tenants/admission";
import type { TenantUsage } from "../../../src/tenants/usage";

const ref = { tenantId: "acme", sessionId: "s1" };
const reached = { workflowId: "keel-run/acme/s1", runId: "run-1" };
/** The usage record of the run started (under the tenant, at the clock's time). */
const counted = { tenantId: "acme", atMs: 1_000 };

/** A start path over fakes: what the run answers (or throws), the gate's slot, the usage records. */
function fakes(
  answer: () => Promise<Delivered>,
  options: { live?: boolean; gate?: () => Promise<void>; record?: () => Promise<void> } = {},
) {
  const calls = { admitted: 0, released: 0, delivered: 0, recorded: [] as unknown[], warned: [] as string[] };
  const runs = {
    handle: () => ({
      describe: async () => {
        if (options.live) return { status: { name: "RUNNING" }, type: "agentRun" };
        throw new WorkflowNotFoundError("no run", "keel-run/acme/s1", undefined);
      },
    }),
    deliver: async () => {
      calls.delivered += 1;
      return answer();
    },
  } as unknown as RunClient;
  const quotas = {
    admit: async () => {
      await options.gate?.();
      calls.admitted += 1;
      return {
        release: async () => {
          calls.released += 1;
        },
      };
    },
  } as unknown as QuotaGate;
  const usage = {
    recordRun: async (tenantId: string, run: object) => {
      await options.record?.();
      calls.recorded.push({ tenantId, ...run });
    },
  } as unknown as TenantUsage;
  const services: StartServices = {
    runs,
    quotas,
    usage,
    warn: (msg) => calls.warned.push(msg),
    now: () => 1_000,
  };
  return { services, calls };
}

const message = { ref, request: { text: "hi", mode: "auto" as const }, settings: DEFAULT_RUN_SETTINGS };
const withQuota = { ...message, quotas: { concurrentRuns: 1 } };

describe("startOrDeliver", () => {
  test("a start keeps its slot and is counted once in usage", async () => {
    const { services, calls } = fakes(async () => ({ ...reached, delivery: "started", queueLength: 1 }));
    expect(await startOrDeliver(services, withQuota)).toEqual({
      type: "started",
      ...reached,
      queueLength: 1,
    });
    expect(calls).toMatchObject({
      admitted: 1,
      released: 0,
      recorded: [counted],
    });
  });

  test("a message that went to a run started meanwhile gives its slot back and is not counted", async () => {
    for (const delivered of [
      { ...reached, delivery: "steered" as const, queueLength: 2 },
      { ...reached, delivery: "pending" as const },
    ]) {
      const { services, calls } = fakes(async () => delivered);
      const outcome = await startOrDeliver(services, withQuota);
      expect(outcome.type).toBe(delivered.delivery === "pending" ? "pending" : "delivered");
      expect(calls).toMatchObject({ admitted: 1, released: 1, recorded: [] });
    }
  });

  test("a message to a live run is a delivery: not admitted, so no slot", async () => {
    const { services, calls } = fakes(async () => ({ ...reached, delivery: "queued", queueLength: 1 }), {
      live: true,
    });
    expect(await startOrDeliver(services, withQuota)).toEqual({
      type: "delivered",
      delivery: "queued",
      ...reached,
      queueLength: 1,
    });
    expect(calls).toMatchObject({ admitted: 0, released: 0 });
  });

  test("over a quota: the quota's refusal, and nothing delivered", async () => {
    const { services, calls } = fakes(async () => ({ ...reached, delivery: "started", queueLength: 1 }), {
      gate: async () => {
        throw new QuotaExceededError("concurrentRuns", 1, 5);
      },
    });
    expect(await startOrDeliver(services, withQuota)).toEqual({
      type: "quota-exceeded",
      quota: "concurrentRuns",
      limit: 1,
      retryAfterSeconds: 5,
      message: "The tenant's quota concurrentRuns (1) is reached; retry after 5 s.",
    });
    expect(calls).toMatchObject({ delivered: 0, recorded: [] });
  });

  test("the run's refusal gives the slot back; a type the run does not name is an invalid message", async () => {
    for (const [type, refusal] of [
      ["QueueFull", "QueueFull"],
      ["RunBusy", "RunBusy"],
      ["Unheard", "InvalidMessage"],
    ] as const) {
      const { services, calls } = fakes(async () => {
        throw new DeliveryRefusedError(type, "no");
      });
      expect(await startOrDeliver(services, withQuota)).toEqual({ type: "refused", refusal, message: "no" });
      expect(calls).toMatchObject({ admitted: 1, released: 1, recorded: [] });
    }
  });

  test("a failure before or during the delivery gives the slot back and is thrown", async () => {
    const { services, calls } = fakes(async () => {
      throw new Error("temporal down");
    });
    await expect(startOrDeliver(services, withQuota)).rejects.toThrow("temporal down");
    const before = fakes(async () => ({ ...reached, delivery: "started", queueLength: 1 }));
    await expect(
      startOrDeliver(before.services, {
        ...withQuota,
        beforeDelivery: async () => {
          throw new Error("thread not saved");
        },
      }),
    ).rejects.toThrow("thread not saved");
    expect([calls.released, before.calls.released, before.calls.delivered]).toEqual([1, 1, 0]);
  });

  test("a start whose usage record fails is still a start (told, not thrown): the message must not be sent again", async () => {
    const { services, calls } = fakes(async () => ({ ...reached, delivery: "started", queueLength: 1 }), {
      record: async () => {
        throw new Error("s3 down");
      },
    });
    expect((await startOrDeliver(services, withQuota)).type).toBe("started");
    expect(calls).toMatchObject({ released: 0, warned: ["the run start was not recorded in usage"] });
  });

  test("without quotas nothing is admitted", async () => {
    const { services, calls } = fakes(async () => ({ ...reached, delivery: "started", queueLength: 1 }));
    await startOrDeliver(services, { ...message, quotas: undefined });
    expect(calls).toMatchObject({ admitted: 0, recorded: [counted] });
  });
});

describe("each caller maps the same outcome", () => {
  const quota: MessageRefusal = {
    type: "quota-exceeded",
    quota: "concurrentRuns",
    limit: 1,
    retryAfterSeconds: 5,
    message: "The tenant's quota concurrentRuns (1) is reached; retry after 5 s.",
  };
  const refused = (refusal: DeliveryRefusalType): MessageRefusal => ({
    type: "refused",
    refusal,
    message: "because",
  });
  const failureOf = (outcome: MessageOutcome) => {
    try {
      firingStartOf(outcome);
    } catch (error) {
      return error as ApplicationFailure;
    }
    throw new Error("no failure");
  };

  test("a quota: the API's 429 with Retry-After, Slack's reply, the firing's non-retryable QuotaExceeded", () => {
    expect(refusalProblem(quota)).toMatchObject({
      slug: "quota-exceeded",
      detail: quota.message,
      extensions: { quota: "concurrentRuns", limit: 1, retryAfterSeconds: 5 },
      headers: { "retry-after": "5" },
    });
    expect(slackRefusalText(quota)).toBe(
      "The message was not delivered: The tenant's quota concurrentRuns (1) is reached; retry after 5 s.",
    );
    const failure = failureOf(quota);
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: "QuotaExceeded", nonRetryable: true });
    expect(failure.message).toBe(
      "the firing started no run: The tenant's quota concurrentRuns (1) is reached; retry after 5 s.",
    );
  });

  test("the run's refusals: problems by type, Slack's replies, the firing's failures (retried but an invalid message)", () => {
    expect(
      (["RunBusy", "QueueFull", "RunEnded", "InvalidMessage"] as const).map((type) => {
        const problem = refusalProblem(refused(type));
        const failure = failureOf(refused(type));
        return [
          problem.slug,
          problem.headers,
          slackRefusalText(refused(type)),
          failure.type,
          failure.nonRetryable,
        ];
      }),
    ).toEqual([
      ["run-busy", {}, "The message was not delivered: because", "RunBusy", false],
      [
        "queue-full",
        { "retry-after": "1" },
        "Too many messages are waiting for this run; try again when it has caught up.",
        "QueueFull",
        false,
      ],
      ["run-ended", {}, "The message was not delivered: because", "RunEnded", false],
      ["invalid-message", {}, "The message was not delivered: because", "InvalidMessage", true],
    ]);
  });

  test("a message taken: no reply in Slack, the firing's run and delivery word", () => {
    const taken: MessageOutcome[] = [
      { type: "started", ...reached, queueLength: 1 },
      { type: "delivered", delivery: "queued", ...reached, queueLength: 3 },
      { type: "pending", ...reached },
    ];
    expect(taken.map((outcome) => [slackRefusalText(outcome), firingStartOf(outcome)])).toEqual([
      [undefined, { runId: "run-1", delivery: "started" }],
      [undefined, { runId: "run-1", delivery: "queued" }],
      [undefined, { runId: "run-1", delivery: "pending" }],
    ]);
  });
});
