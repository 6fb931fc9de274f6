/**
 * Publishing live events is best effort: when the run cannot be reached (here: no such workflow)
 * the sink logs once, drops the events and lets the activity end on time, without throwing.
 */
import { Client, Connection } from "@temporalio/client";
import type { LogLevel, LogMetadata } from "@temporalio/common";
import { MockActivityEnvironment } from "@temporalio/testing";
import { DEFAULT_LIVE_EVENT_OPTIONS, liveEventSink } from "../../../src/activities/live-events";
import { temporalAddress, temporalNamespace, uniqueName } from "../../support/integration-env";

test("a publish that fails is logged and dropped; close() resolves within its timeout", async () => {
  const connection = await Connection.connect({ address: temporalAddress(), connectTimeout: "60 seconds" });
  const warnings: string[] = [];
  const logger = {
    log: (level: LogLevel, message: string, _meta?: LogMetadata) => {
      if (level === "WARN") warnings.push(message);
    },
    trace: () => undefined,
    debug: () => undefined,
    info: () => undefined,
    warn: (message: string) => warnings.push(message),
    error: () => undefined,
  };
  try {
    const client = new Client({ connection, namespace: temporalNamespace() });
    const env = new MockActivityEnvironment(
      {
        workflowExecution: {
          workflowId: uniqueName("no-such-run"),
          runId: "00000000-0000-0000-0000-000000000000",
        },
      },
      { client, logger },
    );
    const started = Date.now();
    await env.run(async () => {
      const sink = liveEventSink({ ...DEFAULT_LIVE_EVENT_OPTIONS, intervalMs: 20 });
      for (let i = 0; i < 20; i++) {
        sink.publish({
          type: "message_update",
          entryId: "e1",
          attempt: 1,
          assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: `word${i} ` },
        });
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await sink.close();
    });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(warnings.filter((message) => message.includes("publishing live events failed"))).toHaveLength(1);
  } finally {
    await connection.close();
  }
}, 60_000);
