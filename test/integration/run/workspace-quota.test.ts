/**
 * The workspace quota on a real worker (KEEL_WORKSPACE_MAX_MB=1): a run whose write and bash calls
 * would take its workspace past the quota gets error results naming it, and goes on — its next
 * calls delete and write again, and the run completes.
 */
import { statSync } from "node:fs";
import * as path from "node:path";
import { createRunStage, messagesOf, type RunStage } from "../../support/run-harness";

let stage: RunStage;
beforeAll(async () => {
  stage = await createRunStage();
  await stage.startWorker({ KEEL_WORKSPACE_MAX_MB: "1" });
});
afterAll(async () => {
  await stage?.close();
});

test("the write and the command that cross the quota are refused; the run goes on and completes", async () => {
  stage.llm.addScenario("quota", {
    turns: [
      {
        toolCalls: [{ name: "bash", arguments: { command: "head -c 900K /dev/zero > fill && echo filled" } }],
      },
      { toolCalls: [{ name: "write", arguments: { path: "over.txt", content: "x".repeat(200 * 1024) } }] },
      { toolCalls: [{ name: "bash", arguments: { command: "head -c 200K /dev/zero > more" } }] },
      { toolCalls: [{ name: "bash", arguments: { command: "rm fill more && echo removed" } }] },
      { toolCalls: [{ name: "write", arguments: { path: "over.txt", content: "x".repeat(200 * 1024) } }] },
    ],
    after: { text: "done" },
  });
  const ref = stage.newSession();
  await stage.runs.deliver(ref, { text: "[scenario:quota] go", mode: "auto" }, stage.settings());
  expect((await stage.result(ref)).status).toBe("completed");
  const results = messagesOf(await stage.entries(ref)).flatMap((message) =>
    message.role === "toolResult"
      ? [
          {
            isError: message.isError,
            text: message.content[0]?.type === "text" ? message.content[0].text : "",
          },
        ]
      : [],
  );
  expect(results.map((result) => result.isError)).toEqual([false, true, true, false, false]);
  expect(results[0]?.text).toBe("filled");
  expect(results[1]?.text).toMatch(
    /^Cannot write over\.txt: the workspace is limited to 1 MB and holds 0\.9 MB/,
  );
  expect(results[2]?.text).toMatch(
    /\[sandbox limit: the workspace is limited to 1 MB; it holds [\d.]+ MB\. Delete files to write more\.\]$/,
  );
  expect(results[3]?.text).toBe("removed");
  expect(results[4]?.text).toMatch(/^Successfully wrote 204800 bytes to over\.txt/);
  const dir = path.join(stage.workspaceRoot, ref.tenantId, ref.sessionId);
  expect(statSync(path.join(dir, "over.txt")).size).toBe(200 * 1024);
});
