/**
 * A run whose settings ask for network "full" (the API refuses such a message unless configured;
 * this run is started past the API) on a worker without KEEL_SANDBOX_NETWORK_FULL: the bash call
 * is refused with an error result naming the setting, and its command never runs.
 */
import { existsSync } from "node:fs";
import * as path from "node:path";
import { messagesOf, runStageForSuite } from "../../support/run-harness";

const stage = runStageForSuite();

test('a bash call with network "full" on a worker that does not enable it is refused; nothing runs', async () => {
  const marker = `ran-full-${Math.floor(Math.random() * 1e6)}`;
  stage().llm.addScenario("full-net", {
    turns: [{ toolCalls: [{ name: "bash", arguments: { command: `touch /workspace/${marker}` } }] }],
    after: { text: "done" },
  });
  const ref = stage().newSession();
  await stage().runs.deliver(
    ref,
    { text: "[scenario:full-net] go", mode: "auto" },
    stage().settings({ network: "full" }),
  );
  expect((await stage().result(ref)).status).toBe("completed");
  const result = messagesOf(await stage().entries(ref)).find((message) => message.role === "toolResult");
  expect(result).toMatchObject({ role: "toolResult", isError: true });
  const text =
    result?.role === "toolResult" && result.content[0]?.type === "text" ? result.content[0].text : "";
  expect(text).toContain("KEEL_SANDBOX_NETWORK_FULL");
  expect(text).toContain("Nothing was run");
  expect(existsSync(path.join(stage().workspaceRoot, ref.tenantId, ref.sessionId, marker))).toBe(false);
});
