/** Shared helpers of the session store integration tests. */
import type { S3Client } from "@aws-sdk/client-s3";
import { createMessageEntry, createSessionHeader } from "../../../src/core/session-entries";
import type { MessageEntry, SessionHeader } from "../../../src/core/session-types";
import type { SessionRef } from "../../../src/store/session-keys";
import { uniqueName } from "../../support/integration-env";

/** One S3 command as the client sent it (recorded once per `send`, retries not counted). */
export interface SentCommand {
  command: string;
  key?: string;
  prefix?: string;
  /** Size of a PutObject body. */
  bodyBytes?: number;
}

/**
 * Records every command sent through `client` from now on. Call it before the client's first
 * request: the client caches each command type's middleware chain at its first use.
 */
export function recordCommands(client: S3Client): SentCommand[] {
  const sent: SentCommand[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { Key?: string; Prefix?: string; Body?: unknown };
      sent.push({
        command: context.commandName ?? "unknown",
        key: input.Key,
        prefix: input.Prefix,
        bodyBytes: typeof input.Body === "string" ? Buffer.byteLength(input.Body) : undefined,
      });
      return next(args);
    },
    { step: "initialize", name: "recordCommands" },
  );
  return sent;
}

export function countOf(sent: readonly SentCommand[], command: string): number {
  return sent.filter((c) => c.command === command).length;
}

export function newRef(): SessionRef {
  return { tenantId: uniqueName("tenant"), sessionId: uniqueName("session") };
}

export function headerFor(ref: SessionRef): SessionHeader {
  return createSessionHeader(ref.sessionId, "2025-01-01T00:00:00.000Z", "/work/project");
}

/** A user-message entry with id `e{seq}` chained to `e{seq-1}`; `text` sets its size. */
export function entryAt(seq: number, text = `message ${seq}`): MessageEntry {
  return createMessageEntry(
    { id: `e${seq}`, parentId: seq === 0 ? null : `e${seq - 1}`, timestamp: "2025-01-01T00:00:00.000Z" },
    { role: "user", content: text, timestamp: 1_735_689_600_000 + seq },
  );
}
