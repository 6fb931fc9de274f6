/**
 * `flushedInvocation`: with telemetry on, an invocation returns only after its telemetry was
 * exported (also when it failed); a receiver that does not answer holds the return only until
 * shortly before the invocation's deadline; with telemetry off nothing else runs.
 */
import { flushedInvocation } from "../../../src/telemetry/lambda";
import type { Telemetry } from "../../../src/telemetry/sdk";

function fakeTelemetry(flush: () => Promise<void>): { telemetry: Telemetry; flushes: () => number } {
  let count = 0;
  const telemetry = {
    flush: () => {
      count += 1;
      return flush();
    },
  } as Telemetry;
  return { telemetry, flushes: () => count };
}

test("the result comes back after the flush finished", async () => {
  const order: string[] = [];
  const { telemetry } = fakeTelemetry(async () => {
    await new Promise((resolve) => setTimeout(resolve, 50));
    order.push("flushed");
  });
  const result = await flushedInvocation(
    telemetry,
    () => 10_000,
    async () => {
      order.push("invoked");
      return 42;
    },
  );
  order.push("returned");
  expect(result).toBe(42);
  expect(order).toEqual(["invoked", "flushed", "returned"]);
});

test("a failed invocation is flushed too, and its error is the one thrown", async () => {
  const { telemetry, flushes } = fakeTelemetry(async () => {});
  await expect(
    flushedInvocation(
      telemetry,
      () => 10_000,
      async () => {
        throw new Error("poll failed");
      },
    ),
  ).rejects.toThrow("poll failed");
  expect(flushes()).toBe(1);
});

test("a receiver that never answers holds the return until half a second before the deadline", async () => {
  const { telemetry } = fakeTelemetry(() => new Promise<void>(() => {}));
  const started = Date.now();
  await flushedInvocation(
    telemetry,
    () => 800,
    async () => "done",
  );
  const waited = Date.now() - started;
  expect(waited).toBeGreaterThanOrEqual(250);
  expect(waited).toBeLessThan(700);
  // No time left at all: no flush is waited for.
  const late = Date.now();
  await flushedInvocation(
    telemetry,
    () => 100,
    async () => "done",
  );
  expect(Date.now() - late).toBeLessThan(50);
});

test("telemetry off: the invocation alone", async () => {
  await expect(
    flushedInvocation(
      undefined,
      () => 10_000,
      async () => "plain",
    ),
  ).resolves.toBe("plain");
});
