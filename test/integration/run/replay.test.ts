/**
 * Replay safety: histories of representative runs, recorded with an earlier version of the
 * workflow code and committed under test/fixtures/histories/, must replay without
 * non-determinism against the current code.
 *
 * Histories are recorded once and kept while the release that recorded them is inside the support
 * window (docs/architecture.md, "Versioning"; test/fixtures/history-releases.json names it): each
 * keeps proving that runs started by the code of its day still replay. After an intended, patched change, add a representative run that takes the
 * new path (a new name) and record the runs that have no history yet with:
 *   KEEL_RECORD_HISTORIES=1 npx jest test/integration/run/replay.test.ts --selectProjects integration
 */

import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { historyFromJSON } from "@temporalio/common/lib/proto-utils";
import { Worker } from "@temporalio/worker";
import { toolPaths } from "../../../src/cli/devstack/tools";
import { type RunSettings, runWorkflowId } from "../../../src/contracts/runs";
import { SecretStore } from "../../../src/tenants/secrets";
import { WebhookStore } from "../../../src/tenants/webhooks";
import { LocalKeyWrapper } from "../../../src/vault/key-wrapper";
import { UNRELEASED } from "../../../src/workflows/patches";
import {
  s3Client,
  s3Settings,
  temporalAddress,
  testTmpDir,
  uniqueName,
  workflowBundlePath,
} from "../../support/integration-env";
import {
  createRunStage,
  eventually,
  modelCalled,
  type RunStage,
  toolCallRunning,
} from "../../support/run-harness";
import { collectRunStream } from "../../support/run-stream";

const historiesDir = resolve(__dirname, "../../fixtures/histories");
const historyReleasesPath = resolve(__dirname, "../../fixtures/history-releases.json");
const recording = process.env.KEEL_RECORD_HISTORIES === "1";
/** The vault key of the recording worker (webhooks need a vault): endpoints are sealed under it. */
const vaultKey = randomBytes(32);

/** A run that writes a file and lists the workspace in one turn, then answers (`scenario` names it). */
function writeAndLs(scenario: string) {
  return async (stage: RunStage, ref: { tenantId: string; sessionId: string }) => {
    stage.llm.addScenario(scenario, {
      turns: [
        {
          toolCalls: [
            { name: "write", arguments: { path: "a.txt", content: "a" } },
            { name: "ls", arguments: {} },
          ],
        },
      ],
      after: { text: "listed" },
    });
    await stage.runs.deliver(ref, { text: `[scenario:${scenario}] go`, mode: "auto" }, stage.settings());
  };
}

/** The runs whose histories are kept: each exercises a different path through the workflow. */
const representativeRuns: Array<{
  name: string;
  drive(stage: RunStage, ref: { tenantId: string; sessionId: string }): Promise<void>;
}> = [
  {
    name: "text-answer",
    drive: async (stage, ref) => {
      await stage.runs.deliver(ref, { text: "hello", mode: "auto" }, stage.settings());
    },
  },
  {
    name: "parallel-tools-and-steering",
    drive: async (stage, ref) => {
      stage.llm.addScenario("replay-tools", {
        turns: [
          {
            toolCalls: [
              { name: "write", arguments: { path: "a.txt", content: "a" } },
              { name: "bash", arguments: { command: "sleep 1; cat a.txt" } },
            ],
          },
        ],
        after: { text: "You said: {{lastUser}}" },
      });
      await stage.runs.deliver(ref, { text: "[scenario:replay-tools] go", mode: "auto" }, stage.settings());
      await toolCallRunning(stage, ref);
      await stage.runs.deliver(ref, { text: "steer now", mode: "steer" }, stage.settings());
    },
  },
  {
    name: "approval-then-abort",
    drive: async (stage, ref) => {
      stage.llm.addScenario("replay-approval", {
        turns: [{ toolCalls: [{ name: "bash", arguments: { command: "echo hi" } }] }],
        after: { text: "{{lastToolResult}}" },
      });
      const policy: RunSettings["policy"] = {
        rules: [{ tool: "bash", action: "ask" }],
        default: "allow",
        approvalTimeoutMs: 60_000,
      };
      await stage.runs.deliver(
        ref,
        { text: "[scenario:replay-approval] go", mode: "auto" },
        stage.settings({ policy }),
      );
      await eventually(async () =>
        (await stage.runs.state(ref))?.status === "waiting_approval" ? true : undefined,
      );
      await stage.runs.signalAbort(ref, "recorded abort");
    },
  },
  {
    // Recorded after parallel calls began to share one workspace claim (patch claim-workspace-once).
    name: "parallel-tools-one-claim",
    drive: async (stage, ref) => {
      stage.llm.addScenario("replay-one-claim", {
        turns: [
          {
            toolCalls: [
              { name: "write", arguments: { path: "a.txt", content: "a" } },
              { name: "ls", arguments: {} },
              { name: "bash", arguments: { command: "cat a.txt" } },
            ],
          },
        ],
        after: { text: "done" },
      });
      await stage.runs.deliver(
        ref,
        { text: "[scenario:replay-one-claim] go", mode: "auto" },
        stage.settings(),
      );
    },
  },
  {
    // Recorded after batches that may change files began to snapshot the workspace (patch workspace-snapshots).
    name: "write-then-snapshot",
    drive: async (stage, ref) => {
      stage.llm.addScenario("replay-snapshot", {
        turns: [{ toolCalls: [{ name: "write", arguments: { path: "a.txt", content: "a" } }] }],
        after: { text: "written" },
      });
      await stage.runs.deliver(
        ref,
        { text: "[scenario:replay-snapshot] go", mode: "auto" },
        stage.settings(),
      );
    },
  },
  {
    // Run version 1: attributes set at start, the claim, snapshot and drain branches without
    // patch markers (RUN_VERSION).
    name: "run-version-1-write-and-ls",
    drive: writeAndLs("replay-version-1"),
  },
  {
    // Run version 2: started with status `running`, so the status is upserted once, at the end.
    name: "run-version-2-write-and-ls",
    drive: writeAndLs("replay-version-2"),
  },
  {
    // The abortRun update (answering with the queued messages) while a model call is in flight.
    name: "abort-update-with-queued",
    drive: async (stage, ref) => {
      stage.llm.addScenario("replay-abort-update", { turns: [], after: { text: "never" } });
      stage.llm.addFaults([{ kind: "hang", match: { scenario: "replay-abort-update" } }]);
      await stage.runs.deliver(
        ref,
        { text: "[scenario:replay-abort-update] go", mode: "auto" },
        stage.settings(),
      );
      await modelCalled(stage, "replay-abort-update");
      await stage.runs.deliver(ref, { text: "later", mode: "followUp" }, stage.settings());
      const aborted = await stage.runs.abort(ref, { reason: "recorded abort update" });
      if (aborted.kind !== "answered") throw new Error(`the run did not answer the abort: ${aborted.kind}`);
    },
  },
  {
    // Recorded after runs got a stream (patch run-stream-drain): the model's deltas arrive as
    // publish signals, a subscriber long-polls the stream, and the run waits for it to catch up.
    name: "streamed-answer-with-subscriber",
    drive: async (stage, ref) => {
      stage.llm.addScenario("replay-stream", { turns: [{ text: "one two three four five six seven" }] });
      stage.llm.addFaults([
        { kind: "slow", match: { scenario: "replay-stream" }, times: 1, tokensPerSecond: 10 },
      ]);
      await stage.runs.deliver(ref, { text: "[scenario:replay-stream] go", mode: "auto" }, stage.settings());
      const items = await collectRunStream(stage.client, runWorkflowId(ref));
      if (!items.some((item) => item.event.type === "message_update")) throw new Error("no deltas streamed");
    },
  },
  {
    // Recorded after messages to a live run became signals: a follow-up and a steering message
    // (deliverMessage, answered by the delivery query), then the abort signal answered by the
    // abortState query, while a model call is in flight.
    name: "signal-deliveries-and-abort",
    drive: async (stage, ref) => {
      stage.llm.addScenario("replay-signals", { turns: [], after: { text: "never" } });
      stage.llm.addFaults([{ kind: "hang", match: { scenario: "replay-signals" } }]);
      await stage.runs.deliver(ref, { text: "[scenario:replay-signals] go", mode: "auto" }, stage.settings());
      await modelCalled(stage, "replay-signals");
      const queued = await stage.runs.deliver(ref, { text: "later", mode: "followUp" }, stage.settings());
      if (queued.delivery !== "queued") throw new Error(`the follow-up was ${queued.delivery}`);
      await stage.runs.deliver(ref, { text: "steer", mode: "steer" }, stage.settings());
      const aborted = await stage.runs.abort(ref, { reason: "recorded abort signal" });
      if (aborted.kind !== "answered") throw new Error(`the run did not answer the abort: ${aborted.kind}`);
    },
  },
  {
    // A task call: the explore agent as a child workflow (patch sub-agents), in a fork of the
    // parent's workspace, its answer the call's result.
    name: "task-call-child-run",
    drive: async (stage, ref) => {
      stage.llm.addScenario("replay-task", {
        turns: [
          {
            toolCalls: [
              { name: "task", arguments: { agent: "explore", prompt: "[scenario:replay-task-child] x" } },
            ],
          },
        ],
        after: { text: "done" },
      });
      stage.llm.addScenario("replay-task-child", {
        turns: [{ toolCalls: [{ name: "ls", arguments: {} }] }],
        after: { text: "explored" },
      });
      await stage.runs.deliver(
        ref,
        { text: "[scenario:replay-task] go", mode: "auto" },
        stage.settings({ tools: ["read", "ls", "task"] }),
      );
    },
  },
  {
    // A task call whose result is written by the `storeTaskResult` activity from the child's
    // session (patch task-result-from-session); the child is cut short by its turn limit.
    name: "task-call-result-from-session",
    drive: async (stage, ref) => {
      stage.llm.addScenario("replay-task-result", {
        turns: [
          {
            toolCalls: [
              { name: "task", arguments: { agent: "lister", prompt: "[scenario:replay-task-lister] x" } },
            ],
          },
        ],
        after: { text: "done" },
      });
      stage.llm.addScenario("replay-task-lister", {
        turns: [],
        after: { toolCalls: [{ name: "ls", arguments: {} }] },
      });
      await stage.runs.deliver(
        ref,
        { text: "[scenario:replay-task-result] go", mode: "auto" },
        stage.settings({
          tools: ["read", "ls", "task"],
          agents: [{ name: "lister", description: "lists", tools: ["ls"], maxTurns: 1 }],
        }),
      );
    },
  },
  {
    // Three parallel task calls taking shares of the parent's cost budget and turns (patch
    // sub-agent-shares): two turns left make one child each for the first two calls, and the
    // third is not started.
    name: "task-calls-sharing-budgets",
    drive: async (stage, ref) => {
      stage.llm.addScenario("replay-task-shares", {
        turns: [
          {
            toolCalls: ["one", "two", "three"].map((which) => ({
              name: "task",
              arguments: { agent: "lister", prompt: `[scenario:replay-task-shares-child] ${which}` },
            })),
          },
        ],
        after: { text: "done" },
      });
      stage.llm.addScenario("replay-task-shares-child", {
        turns: [],
        after: { toolCalls: [{ name: "ls", arguments: {} }] },
      });
      const settings = stage.settings({
        tools: ["read", "ls", "task"],
        agents: [{ name: "lister", description: "lists", tools: ["ls"] }],
      });
      await stage.runs.deliver(
        ref,
        { text: "[scenario:replay-task-shares] go", mode: "auto" },
        { ...settings, limits: { ...settings.limits, maxTurns: 3, maxCostUsd: 1 } },
      );
    },
  },
  {
    // A model call that fails for good: the run closes the session and ends as failed.
    name: "failed-model-call",
    drive: async (stage, ref) => {
      await stage.runs.deliver(
        ref,
        { text: "hello", mode: "auto" },
        stage.settings({ model: "no-such-model" }),
      );
    },
  },
  {
    // A model that is overloaded until its breaker opens: the turn fails over to the next model.
    name: "model-failover",
    drive: async (stage, ref) => {
      stage.llm.addScenario("replay-failover", { turns: [], after: { text: "You said: {{lastUser}}" } });
      stage.llm.addFaults([
        { kind: "overloaded", match: { model: "local-anthropic", scenario: "replay-failover" }, rate: 1 },
      ]);
      await stage.runs.deliver(
        ref,
        { text: "[scenario:replay-failover] go", mode: "auto" },
        stage.settings({ model: "local-anthropic", fallbackModels: ["local-chat"] }),
      );
    },
  },
  {
    // A run whose tenant has an endpoint taking every type: it publishes run.started and
    // run.completed with publishWebhookEvent activities (patch webhook-events).
    name: "webhook-events",
    drive: async (stage, ref) => {
      const s3 = s3Client();
      const vault = new SecretStore(s3, s3Settings(), new LocalKeyWrapper(vaultKey));
      await new WebhookStore(s3, s3Settings(), vault).create(ref.tenantId, {
        url: "https://hooks.keel.test/replay",
        events: ["*"],
      });
      await stage.runs.deliver(ref, { text: "hello", mode: "auto" }, stage.settings());
    },
  },
];

if (recording) {
  test("record histories of representative runs", async () => {
    const stage = await createRunStage();
    const keyFile = join(testTmpDir(), `${uniqueName("vault")}.key`);
    writeFileSync(keyFile, vaultKey.toString("base64"), { mode: 0o600 });
    await stage.startWorker({ KEEL_VAULT_KEY_FILE: keyFile });
    try {
      const recorded = new Set(readdirSync(historiesDir));
      for (const run of representativeRuns.filter((candidate) => !recorded.has(`${candidate.name}.json`))) {
        const ref = stage.newSession();
        await run.drive(stage, ref);
        await stage.result(ref);
        // The Temporal CLI writes the same proto3 JSON that replay reads (the SDK's serializer
        // trips over jest's separate Uint8Array realm).
        const history = execFileSync(
          toolPaths().temporal,
          [
            "workflow",
            "show",
            "--workflow-id",
            runWorkflowId(ref),
            "--address",
            temporalAddress(),
            "--output",
            "json",
          ],
          { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
        );
        writeFileSync(join(historiesDir, `${run.name}.json`), history);
        // Recorded by the code not yet released (test/unit/workflows/versioning.test.ts).
        const releases = JSON.parse(readFileSync(historyReleasesPath, "utf8"));
        writeFileSync(
          historyReleasesPath,
          `${JSON.stringify({ ...releases, [`${run.name}.json`]: UNRELEASED }, null, 2)}\n`,
        );
      }
    } finally {
      await stage.close();
    }
  }, 180_000);
} else {
  const files = readdirSync(historiesDir).filter((file) => file.endsWith(".json"));

  test("committed histories exist for every representative run", () => {
    expect(files.sort()).toEqual(representativeRuns.map((run) => `${run.name}.json`).sort());
  });

  test.each(files)("%s replays against the current workflow code", async (file) => {
    const history = historyFromJSON(JSON.parse(readFileSync(join(historiesDir, file), "utf8")));
    await Worker.runReplayHistory({ workflowBundle: { codePath: workflowBundlePath() } }, history, file);
  });
}
