/**
 * The start marker of an `unsafe` call (bash) is written once the call's workspace is ready, right
 * before it runs: an S3 failure while the workspace is made ready (on the shared queue: taking it,
 * restoring it) leaves no marker, and the retry runs the call instead of reporting an unknown
 * outcome. An attempt at a call that did start refuses before it touches the workspace. The tool
 * activity runs in Temporal's activity test environment over the real S3 server and bubblewrap.
 */
import * as fs from "node:fs/promises";
import * as path from "node:path";
import type { S3Client } from "@aws-sdk/client-s3";
import { MockActivityEnvironment } from "@temporalio/testing";
import type { ActivityDeps } from "../../../src/activities/deps";
import { executeToolActivity } from "../../../src/activities/execute-tool";
import type { ExecuteToolInput, ExecuteToolResult } from "../../../src/contracts/activities";
import { UNKNOWN_OUTCOME_TEXT } from "../../../src/core/markers";
import { createMessageEntry } from "../../../src/core/session-entries";
import { emptyUsage } from "../../../src/core/usage";
import { createS3Client } from "../../../src/store/s3-config";
import { SessionStore } from "../../../src/store/session-store";
import { ToolCallMarkers } from "../../../src/store/tool-call-markers";
import { WorkspaceSnapshots } from "../../../src/store/workspace-snapshots";
import { DEFAULT_SANDBOX_POLICY } from "../../../src/tools/sandbox";
import { workspaceFor } from "../../../src/tools/workspace";
import { s3Client, s3Settings, testTmpDir } from "../../support/integration-env";
import { type S3FaultProxy, startS3FaultProxy } from "../../support/s3-fault-proxy";
import { entryAt, headerFor, newRef } from "./store-fixtures";

const SHARED_QUEUE = "keel/shared";
const COMMAND = "echo ran >> runs.txt; cat runs.txt";

let proxy: S3FaultProxy;
const clients: S3Client[] = [];
beforeAll(async () => {
  proxy = await startS3FaultProxy(s3Settings().endpoint ?? "", 0);
});
afterAll(async () => {
  for (const client of clients) client.destroy();
  await proxy.close();
});

/**
 * A Lambda-like environment of the shared queue: sessions and markers reach S3 directly, the
 * workspace's holder and snapshots go through the fault proxy (so they alone can fail).
 */
async function sharedEnvironment(name: string): Promise<ActivityDeps> {
  const direct = s3Client();
  const throughProxy = createS3Client({ ...s3Settings(), endpoint: proxy.endpoint });
  clients.push(direct, throughProxy);
  return {
    store: new SessionStore(direct, s3Settings()),
    markers: new ToolCallMarkers(direct, s3Settings()),
    snapshots: new WorkspaceSnapshots(throughProxy, s3Settings()),
    snapshotMaxBytes: 1024 ** 2,
    workspaceRoot: await fs.mkdtemp(path.join(testTmpDir(), `${name}-`)),
    workerTaskQueue: SHARED_QUEUE,
    sharedTaskQueue: SHARED_QUEUE,
    sandbox: DEFAULT_SANDBOX_POLICY,
    liveEvents: false,
    // The tool activity never calls a model.
    provider: undefined as never,
    catalog: undefined as never,
  };
}

/** A session whose entry e1 is an assistant message calling bash; its result goes at seq 2. */
async function sessionCallingBash(): Promise<ExecuteToolInput> {
  const ref = newRef();
  const client = s3Client();
  clients.push(client);
  const store = new SessionStore(client, s3Settings());
  await store.createSession(ref, headerFor(ref));
  await store.putEntry(ref, 0, entryAt(0));
  await store.putEntry(
    ref,
    1,
    createMessageEntry(
      { id: "e1", parentId: "e0", timestamp: "2025-01-01T00:00:01.000Z" },
      {
        role: "assistant",
        content: [{ type: "toolCall", id: "call-1", name: "bash", arguments: { command: COMMAND } }],
        api: "openai-completions",
        provider: "openai",
        model: "local-chat",
        usage: emptyUsage(),
        stopReason: "toolUse",
        timestamp: 1_735_689_601_000,
      },
    ),
  );
  return {
    ...ref,
    assistantSeq: 1,
    toolCallId: "call-1",
    toolName: "bash",
    slot: { seq: 2, id: "e2", parentId: "e1", timestamp: "2025-01-01T00:00:02.000Z" },
  };
}

function attempt(deps: ActivityDeps, input: ExecuteToolInput, number: number): Promise<ExecuteToolResult> {
  const env = new MockActivityEnvironment({ attempt: number, taskQueue: SHARED_QUEUE });
  return env.run(executeToolActivity(deps), input) as Promise<ExecuteToolResult>;
}

async function storedResultText(deps: ActivityDeps, input: ExecuteToolInput): Promise<string> {
  const entry = await deps.store.getEntry(input, input.slot.seq);
  if (entry?.type !== "message" || entry.message.role !== "toolResult") return "";
  return entry.message.content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

test("S3 down while the call's workspace is taken: no marker is left, and the retry runs the call once", async () => {
  const deps = await sharedEnvironment("unsafe-retry");
  const input = await sessionCallingBash();
  const runs = path.join(workspaceFor(deps.workspaceRoot, input.tenantId, input.sessionId).dir, "runs.txt");

  await proxy.goDown();
  try {
    await expect(attempt(deps, input, 1)).rejects.toThrow();
  } finally {
    await proxy.comeBack();
  }
  expect(await deps.markers.wasStarted(input, markerOf(input))).toBe(false);
  await expect(fs.readFile(runs, "utf8")).rejects.toMatchObject({ code: "ENOENT" });

  expect(await attempt(deps, input, 2)).toMatchObject({ outcome: "executed", isError: false });
  expect(await storedResultText(deps, input)).toBe("ran");
  expect(await fs.readFile(runs, "utf8")).toBe("ran\n");
});

test("a call that another attempt started reports an unknown outcome without taking the workspace, at attempt 1 too (a moved call is scheduled anew)", async () => {
  const deps = await sharedEnvironment("unsafe-started");
  const input = await sessionCallingBash();
  expect(await deps.markers.markStarted(input, markerOf(input), 1)).toBe(true);

  // With the holder's store down, a retry that tried to take the workspace would fail.
  await proxy.goDown();
  try {
    expect(await attempt(deps, input, 1)).toMatchObject({ outcome: "unknown_outcome", isError: true });
  } finally {
    await proxy.comeBack();
  }
  expect(await storedResultText(deps, input)).toBe(UNKNOWN_OUTCOME_TEXT);
  const dir = workspaceFor(deps.workspaceRoot, input.tenantId, input.sessionId).dir;
  await expect(fs.stat(dir)).rejects.toMatchObject({ code: "ENOENT" });
});

function markerOf(input: ExecuteToolInput) {
  return { kind: "toolCall" as const, resultSlot: input.slot, toolCallId: input.toolCallId };
}
