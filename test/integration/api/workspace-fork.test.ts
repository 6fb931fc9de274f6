/**
 * A fork starts with the files as they were at the fork point, and whatever it does to them
 * leaves the session it came from untouched (real worker, real runs, through the API).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { SessionEntry } from "../../../src/core/session-types";
import type { TurnContext } from "../../../src/providers/local-server/types";
import { workspaceFor } from "../../../src/tools/workspace";
import { messagesOf } from "../../support/run-harness";
import { type ApiStage, createApiStage } from "./api-stage";

let api: ApiStage;

beforeAll(async () => {
  api = await createApiStage();
  const lastUser = (context: TurnContext) =>
    context.request.messages.filter((message) => message.role === "user").at(-1)?.text ?? "";
  // The original run writes a.txt, then edits it. A message saying "check" (sent to a fork made
  // after the write) writes b.txt and reads a.txt instead; the answer quotes that read.
  api.stage.llm.addScenario("ws-fork", {
    turns: [
      { toolCalls: [{ name: "write", arguments: { path: "a.txt", content: "first version\n" } }] },
      (context) =>
        lastUser(context).includes("check")
          ? {
              toolCalls: [
                { name: "write", arguments: { path: "b.txt", content: "only in the fork\n" } },
                { name: "read", arguments: { path: "a.txt" } },
              ],
            }
          : {
              toolCalls: [
                { name: "edit", arguments: { path: "a.txt", oldText: "first", newText: "second" } },
              ],
            },
    ],
    after: { text: "The file says: {{lastToolResult}}" },
  });
});

afterAll(async () => {
  await api?.close();
});

const refOf = (sessionId: string) => ({ tenantId: api.tenants.a, sessionId });
const workspaceDir = (sessionId: string) =>
  workspaceFor(api.stage.workspaceRoot, api.tenants.a, sessionId).dir;

async function runToEnd(sessionId: string, text: string): Promise<SessionEntry[]> {
  const sent = await api.call("POST", `/v1/sessions/${sessionId}/messages`, { json: { text } });
  expect(sent.status).toBe(202);
  expect((await api.stage.result(refOf(sessionId))).status).toBe("completed");
  return api.stage.entries(refOf(sessionId));
}

function lastAssistantText(entries: SessionEntry[]): string {
  const last = messagesOf(entries).at(-1);
  return last?.role === "assistant" ? JSON.stringify(last.content) : "";
}

/** The original session, finished: a.txt written ("first version"), then edited ("second version"). */
async function originalSession(): Promise<{ sessionId: string; writeResultId: string }> {
  const sessionId = api.sessionId();
  const entries = await runToEnd(sessionId, "[scenario:ws-fork] go");
  const writeResult = entries.find(
    (entry) =>
      entry.type === "message" && entry.message.role === "toolResult" && entry.message.toolName === "write",
  );
  if (!writeResult) throw new Error("no stored result of the write");
  expect(readFileSync(join(workspaceDir(sessionId), "a.txt"), "utf8")).toBe("second version\n");
  return { sessionId, writeResultId: writeResult.id };
}

async function fork(sessionId: string, entryId: string): Promise<string> {
  const forked = await api.call("POST", `/v1/sessions/${sessionId}/fork`, { json: { entryId } });
  expect(forked.status).toBe(201);
  return forked.body.sessionId as string;
}

/** A run on `forkId` sees a.txt as at the fork point and writes b.txt; the original keeps its files. */
async function expectForkStartsAtForkPoint(original: string, forkId: string): Promise<void> {
  const entries = await runToEnd(forkId, "check the file");
  expect(lastAssistantText(entries)).toContain("first version");
  expect(readFileSync(join(workspaceDir(forkId), "a.txt"), "utf8")).toBe("first version\n");
  expect(readFileSync(join(workspaceDir(forkId), "b.txt"), "utf8")).toBe("only in the fork\n");
  // The original session's files are untouched, on disk and in its latest snapshot.
  expect(readFileSync(join(workspaceDir(original), "a.txt"), "utf8")).toBe("second version\n");
  expect(existsSync(join(workspaceDir(original), "b.txt"))).toBe(false);
}

test("a fork made at an entry before an edit starts with the file as it was there; the original is untouched", async () => {
  const { sessionId, writeResultId } = await originalSession();
  await expectForkStartsAtForkPoint(sessionId, await fork(sessionId, writeResultId));
}, 120_000);

test("a fork of a fork that never ran still starts with the files of the fork point", async () => {
  const { sessionId, writeResultId } = await originalSession();
  const first = await fork(sessionId, writeResultId);
  await expectForkStartsAtForkPoint(sessionId, await fork(first, writeResultId));
}, 120_000);

test("branching a fork back to an entry it inherited restores the files of that entry", async () => {
  const { sessionId, writeResultId } = await originalSession();
  const forkId = await fork(sessionId, writeResultId);
  await expectForkStartsAtForkPoint(sessionId, forkId);
  const branched = await api.call("POST", `/v1/sessions/${forkId}/branch`, {
    json: { entryId: writeResultId, summarize: false },
  });
  expect(branched.status).toBe(200);
  // The entry's snapshot belongs to the original session: the fork's own b.txt is gone again.
  expect(readFileSync(join(workspaceDir(forkId), "a.txt"), "utf8")).toBe("first version\n");
  expect(existsSync(join(workspaceDir(forkId), "b.txt"))).toBe(false);
}, 120_000);
