/**
 * The `keel` command driven as a subprocess against a live API (the Node server over the real
 * Temporal and S3 servers, a worker process, the local LLM server): runs followed live, JSON
 * output, sessions, export/import, abort, approvals, and the exit codes scripts rely on.
 */

import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { TurnContext } from "../../../src/providers/local-server";
import { testTmpDir, uniqueName } from "../../support/integration-env";
import { createRunStage, eventually, type RunStage, slowEchoScenario } from "../../support/run-harness";
import { type CliApi, runKeel, spawnKeel, startCliApi } from "./keel-process";

const KEY = `cli-key-${uniqueName("k")}`;
const OTHER_KEY = `cli-other-${uniqueName("k")}`;

let stage: RunStage;
let api: CliApi;
let env: Record<string, string>;

beforeAll(async () => {
  stage = await createRunStage();
  await stage.startWorker();
  api = await startCliApi(stage, { [KEY]: stage.tenantId, [OTHER_KEY]: uniqueName("tenant") });
  env = { KEEL_API_URL: api.url, KEEL_API_KEY: KEY };
});

afterAll(async () => {
  await api?.close();
  await stage?.close();
});

// Every test starts several `keel` processes (tsx each) on a shared 2-core machine.
jest.setTimeout(180_000);

const keel = (args: string[], extraEnv: Record<string, string> = {}) =>
  runKeel(args, { ...env, ...extraEnv });

test("run --follow shows turns, messages, tokens and cost live and exits 0", async () => {
  const sessionId = uniqueName("cli");
  const result = await keel(["run", "hello from the CLI", "--session", sessionId, "--follow"]);
  expect(result).toMatchObject({ code: 0, stderr: "" });
  expect(result.stdout).toContain(`session ${sessionId}: started`);
  expect(result.stdout).toMatch(/── turn 1/);
  expect(result.stdout).toContain("› user: hello from the CLI");
  expect(result.stdout).toContain("● You said: hello from the CLI");
  expect(result.stdout).toMatch(/\d+ in \/ \d+ out tokens · \$\d+\.\d{4}/);
  expect(result.stdout).toMatch(/■ run completed/);

  // A second message to the same (now idle) session starts the next run.
  const next = await keel(["send", sessionId, "again", "--json"]);
  expect(next.code).toBe(0);
  expect(JSON.parse(next.stdout)).toMatchObject({ sessionId, delivery: "started" });
});

test("--json: the delivery, then every event (live deltas too) as one JSON line ending with agent_end", async () => {
  const result = await keel(["run", "machine output", "--follow", "--json"]);
  expect(result.code).toBe(0);
  const lines = result.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
  expect(lines[0]).toMatchObject({ type: "delivered", delivery: "started", sessionId: expect.any(String) });
  const events = lines.slice(1).filter((event) => event.seq !== undefined);
  expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
  expect(events.at(-1)).toMatchObject({ type: "agent_end", status: "completed" });
  const deltas = lines
    .slice(1)
    .filter((event) => event.type === "message_update")
    .map((event) => event.assistantMessageEvent.delta)
    .join("");
  expect(deltas).toBe("You said: machine output");
  const whole = await keel(["run", "whole messages", "--follow", "--json", "--no-stream"]);
  expect(whole.code).toBe(0);
  expect(whole.stdout).not.toContain("message_update");
  expect(whole.stdout).toContain("agent_end");

  const sessionId = lines[0].sessionId as string;
  const shown = await keel(["show", sessionId, "--json"]);
  expect(JSON.parse(shown.stdout)).toMatchObject({
    sessionId,
    status: "idle",
    run: { status: "completed", turn: 1 },
    entryCount: expect.any(Number),
  });
  const listed = await keel(["sessions", "--json", "--limit", "1000"]);
  expect(JSON.parse(listed.stdout).sessions.map((s: { sessionId: string }) => s.sessionId)).toContain(
    sessionId,
  );
  const page = await keel(["events", sessionId, "--after", "2", "--json"]);
  expect(page.code).toBe(0);
  // JSON Lines: one event object per line, the same lines `--follow --json` prints.
  const pageLines = page.stdout.trim().split("\n");
  expect(pageLines.map((line) => JSON.parse(line))).toEqual(events.slice(2));
});

test("export -o and import round-trip a session", async () => {
  const sessionId = uniqueName("cli");
  expect((await keel(["run", "to be exported", "--session", sessionId, "--follow"])).code).toBe(0);
  const file = join(testTmpDir(), `${sessionId}.jsonl`);
  const exported = await keel(["export", sessionId, "-o", file]);
  expect(exported.code).toBe(0);
  const lines = readFileSync(file, "utf8").trim().split("\n");
  expect(JSON.parse(lines[0] as string)).toMatchObject({ type: "session", version: 3 });
  expect(exported.stdout).toContain(`wrote ${file} (${lines.length} lines)`);

  const told = await keel(["import", file]);
  expect(told.stdout).toMatch(
    new RegExp(
      `^imported ${file} as session \\S+ \\(${lines.length - 1} entries, exported from session ${sessionId}\\)$`,
      "m",
    ),
  );
  const imported = await keel(["import", file, "--json"]);
  expect(imported.code).toBe(0);
  const answer = JSON.parse(imported.stdout);
  expect(answer).toMatchObject({ sessionId: expect.any(String), entryCount: lines.length - 1 });
  expect(answer.sessionId).not.toBe(sessionId);
  const again = await keel(["export", answer.sessionId]);
  const stripIds = (text: string) => text.trim().split("\n").slice(1);
  expect(stripIds(again.stdout)).toEqual(stripIds(readFileSync(file, "utf8")));
});

test("export --html writes the transcript as one offline page", async () => {
  const sessionId = uniqueName("cli");
  expect((await keel(["run", "to be read in a browser", "--session", sessionId, "--follow"])).code).toBe(0);
  const file = join(testTmpDir(), `${sessionId}.html`);
  const exported = await keel(["export", sessionId, "--html", "-o", file]);
  expect(exported.code).toBe(0);
  expect(exported.stdout).toContain(`wrote ${file}`);
  const html = readFileSync(file, "utf8");
  expect(html).toMatch(/^<!doctype html>/);
  expect(html).toContain("connect-src 'none'");
  expect(html).toContain("to be read in a browser");
});

test("export --with-workspace writes a .tar.gz that import turns back into a session with its files", async () => {
  stage.llm.addScenario("cli-archive", {
    turns: [{ toolCalls: [{ name: "write", arguments: { path: "notes/todo.txt", content: "ship it\n" } }] }],
    after: { text: "done" },
  });
  const sessionId = uniqueName("cli");
  const ran = await keel(["run", "[scenario:cli-archive] write", "--session", sessionId, "--follow"]);
  expect(ran.code).toBe(0);
  const file = join(testTmpDir(), `${sessionId}.tar.gz`);
  const exported = await keel(["export", sessionId, "--with-workspace", "-o", file]);
  expect(exported.code).toBe(0);
  expect(exported.stdout).toContain(`wrote ${file}`);
  expect(execFileSync("tar", ["tzf", file], { encoding: "utf8" }).split("\n")).toEqual(
    expect.arrayContaining(["session.jsonl", "workspace/notes/todo.txt"]),
  );

  const imported = await keel(["import", file]);
  expect(imported.code).toBe(0);
  expect(imported.stdout).toContain(`imported ${file} as session `);
  expect(imported.stdout).toMatch(/as session \S+ \(\d+ entries, workspace of 1 file\)/);

  const deleted = await keel(["delete", sessionId, "--json"]);
  expect(deleted.code).toBe(0);
  expect(JSON.parse(deleted.stdout)).toMatchObject({ sessionId, deletedObjects: expect.any(Number) });
  expect(JSON.parse(deleted.stdout).deletedObjects).toBeGreaterThan(0);
  // Nothing of the session is readable any more, not even its run's events from Temporal.
  for (const command of [
    ["show", sessionId, "--json"],
    ["events", sessionId, "--json"],
  ]) {
    const gone = await keel(command);
    expect(gone.code).toBe(3);
    expect(JSON.parse(gone.stderr)).toMatchObject({ error: "session-not-found", status: 404 });
  }
});

test("a run whose model calls overflow the context shows each call's usage on its turn line, adding up to the total", async () => {
  // local-chat has a 100k window: 460,842 prompt tokens overflow it ($1 per million input tokens).
  stage.llm.addScenario("cli-overflow", {
    turns: [],
    after: ({ request }: TurnContext) =>
      request.system.includes("context summarization assistant")
        ? { text: "Summary: a large request." }
        : { text: "too big", usage: { input: 460_842, output: 10 } },
  });
  const result = await keel(["run", "[scenario:cli-overflow] answer at length", "--follow", "--no-stream"]);
  expect(result.code).toBe(1);
  // Two calls (the second after compacting), each on its turn line; the total is their sum.
  const lines = result.stdout.split("\n").filter((line) => /^\s+\d+ in \/ /.test(line));
  expect(lines).toHaveLength(2);
  for (const line of lines) expect(line).toMatch(/^\s+460842 in \/ 10 out tokens · \$0\.4609 \(run total/);
  expect(result.stdout).toMatch(
    /■ run failed \(context overflow: .*\) · 921684 in \/ 20 out tokens · \$0\.9217/,
  );
});

test("abort stops a live run and prints the queued messages it never read; following it then exits 1", async () => {
  slowEchoScenario(stage, "cli-slow", 20_000);
  const sessionId = uniqueName("cli");
  const started = await keel(["run", "[scenario:cli-slow] take your time", "--session", sessionId, "--json"]);
  expect(JSON.parse(started.stdout)).toMatchObject({ delivery: "started" });
  const follower = keel(["events", sessionId, "--follow"]);
  for (const text of ["check the tests", 'then "the docs"']) {
    expect((await keel(["followup", sessionId, text])).code).toBe(0);
  }
  const aborted = await keel(["abort", sessionId, "--reason", "changed my mind"]);
  expect(aborted).toMatchObject({
    code: 0,
    stdout: [
      `abort requested for session ${sessionId}`,
      "2 queued message(s) were not processed:",
      '  "check the tests"',
      '  "then \\"the docs\\""',
      "",
    ].join("\n"),
  });
  const followed = await follower;
  expect(followed.code).toBe(1);
  expect(followed.stdout).toMatch(/■ run aborted/);
  // Nothing is live any more: a second abort is refused.
  const refused = await keel(["abort", sessionId]);
  expect(refused.code).toBe(3);
  expect(refused.stderr).toMatch(/already ended/);
  // The listing says how the run ended (its stored entries alone cannot tell an abort apart).
  const listed = await keel(["sessions", "--limit", "50"]);
  expect(listed.stdout).toMatch(new RegExp(`^${sessionId}  aborted  \\$\\d+\\.\\d{4}  `, "m"));
});

test("a run paused at its cost budget: show and following say whose budget and how to go on; the suggested raise lets it finish", async () => {
  stage.llm.addScenario("cli-budget", {
    turns: [{ toolCalls: [{ name: "ls", arguments: {} }] }],
    after: { text: "listed" },
  });
  const sessionId = uniqueName("cli");
  const follower = keel([
    "run",
    "[scenario:cli-budget] list",
    "--session",
    sessionId,
    "--max-cost",
    "0.000001",
    "--follow",
  ]);
  await eventually(
    async () => ((await keel(["show", sessionId, "--json"])).stdout.includes('"paused"') ? true : undefined),
    60_000,
    "the run paused",
  );
  // Show says whose budget stopped the run and the commands that let it go on.
  const paused = (await keel(["show", sessionId])).stdout;
  expect(paused).toMatch(
    /^paused {3}at this run's cost budget \(\$0\.000001; used \$\d+\.\d+\); without a raise or a resume it ends at \d{4}-/m,
  );
  const [, raise] =
    paused.match(
      new RegExp(
        `^go on {4}(keel budget ${sessionId} --max-cost \\d+\\.\\d+) \\(raises it\\) or keel resume ${sessionId} \\(goes on without it\\)$`,
        "m",
      ),
    ) ?? [];
  expect(raise).toBeDefined();
  const small = await keel(["budget", sessionId, "--max-cost", "0.0000011"]);
  expect(small).toMatchObject({ code: 0 });
  if (small.stdout.startsWith("budget change recorded")) {
    // A worker too busy to answer within the API's wait (a loaded machine): the change is recorded
    // all the same, and the run shows it once it has taken it — still paused.
    await eventually(
      async () => {
        const shown = (await keel(["show", sessionId, "--json"])).stdout;
        return shown.includes("0.0000011") && shown.includes('"paused"') ? true : undefined;
      },
      30_000,
      "the run took the raise and stayed paused",
    );
  } else {
    expect(small.stdout).toMatch(
      new RegExp(
        `^session ${sessionId}: paused · budget \\$0\\.0000011, ∞ tokens \\(still paused: cost budget reached`,
      ),
    );
  }
  // The raise show suggested lets the run go on.
  const raised = await keel([...(raise ?? "").split(" ").slice(1)]);
  expect(raised.code).toBe(0);
  expect(raised.stdout).not.toContain("still paused");
  const followed = await follower;
  expect(followed.code).toBe(0);
  expect(followed.stdout).toContain(`⏸ paused: cost budget reached`);
  expect(followed.stdout).toContain(`go on: ${raise} (raises it) or keel resume ${sessionId}`);
  expect(followed.stdout).toMatch(/▶ resumed[\s\S]*■ run completed/);
  // Nothing is live any more.
  expect((await keel(["resume", sessionId])).code).toBe(3);
});

test("Ctrl-C while following says the run goes on and how to get back to it", async () => {
  slowEchoScenario(stage, "cli-ctrl-c", 20_000);
  const sessionId = uniqueName("cli");
  const follower = spawnKeel(["run", "[scenario:cli-ctrl-c] slow", "--session", sessionId, "--follow"], env);
  await eventually(async () => follower.stdout().includes("turn 1") || undefined);
  follower.child.kill("SIGINT");
  expect(await follower.exited).toBe(130);
  expect(follower.stderr()).toContain(
    `Stopped following; the run goes on. Follow it again: keel events ${sessionId} --follow`,
  );
  // The run did go on: abort it so that the test leaves nothing running.
  expect((await keel(["abort", sessionId])).code).toBe(0);
});

test("approve reaches the API: a tool call that is not waiting is refused (exit 3)", async () => {
  const sessionId = uniqueName("cli");
  expect((await keel(["run", "nothing to approve", "--session", sessionId, "--follow"])).code).toBe(0);
  const result = await keel(["approve", sessionId, "call_missing", "--json"]);
  expect(result.code).toBe(3);
  expect(JSON.parse(result.stderr)).toMatchObject({ error: "no-pending-approval", status: 409 });
});

test("exit codes: 2 for usage errors, 3 for not found or refused, 1 when the API is unreachable", async () => {
  const cases: Array<[string[], Record<string, string>, number, RegExp]> = [
    [["frobnicate"], {}, 2, /unknown command 'frobnicate'/],
    [["show"], {}, 2, /expected <session>/],
    [["run", "x", "--bogus"], {}, 2, /Unknown option '--bogus'/],
    [["sessions", "--limit", "zero"], {}, 2, /--limit must be an integer/],
    [["approve", "s", "c", "--args", "[1]"], {}, 2, /--args must be a JSON object/],
    // Once, with the catalog's ids.
    [
      ["run", "x", "--model", "no-such-model"],
      {},
      2,
      /^keel: [^\n]*Unknown model "no-such-model": not in the model catalog \([^)]+\)(?![\s\S]*Unknown model)/,
    ],
    [
      ["show", "no-such-session"],
      {},
      3,
      /Session "no-such-session" does not exist for this API key; `keel sessions` lists yours/,
    ],
    [["sessions"], { KEEL_API_KEY: "wrong" }, 3, /Set KEEL_API_KEY or pass --key/],
    [["sessions"], { KEEL_API_URL: "http://127.0.0.1:9" }, 1, /cannot reach the API[\s\S]*npm run dev/],
  ];
  for (const [args, extraEnv, code, message] of cases) {
    const result = await keel(args, extraEnv);
    expect({ args, code: result.code, stderr: result.stderr }).toEqual({
      args,
      code,
      stderr: expect.stringMatching(message),
    });
  }
});

test("another tenant's session is not found (exit 3), with the problem on stderr under --json", async () => {
  const sessionId = uniqueName("cli");
  expect((await keel(["run", "mine", "--session", sessionId, "--follow"])).code).toBe(0);
  const result = await keel(["show", sessionId, "--json"], { KEEL_API_KEY: OTHER_KEY });
  expect(result.code).toBe(3);
  expect(JSON.parse(result.stderr)).toMatchObject({ error: "session-not-found", status: 404 });
  expect(result.stdout).toBe("");
});

test("import of an unreadable file is a usage error", async () => {
  const file = join(testTmpDir(), "not-there.jsonl");
  const result = await keel(["import", file]);
  expect(result.code).toBe(2);
  expect(result.stderr).toContain(`cannot read ${file}`);
  const garbage = join(testTmpDir(), "garbage.jsonl");
  writeFileSync(garbage, "not json at all\n");
  const refused = await keel(["import", garbage, "--json"]);
  expect(refused.code).toBe(2);
  expect(JSON.parse(refused.stderr)).toMatchObject({ status: 400 });
});

/** A scenario whose first turn calls bash, then answers. */
function bashScenario(name: string): void {
  stage.llm.addScenario(name, {
    turns: [{ text: "Let me check.", toolCalls: [{ name: "bash", arguments: { command: "echo checked" } }] }],
    after: { text: "Done: {{lastToolResult}}" },
  });
}

async function showJson(sessionId: string) {
  const shown = await keel(["show", sessionId, "--json"]);
  expect(shown.code).toBe(0);
  return JSON.parse(shown.stdout);
}

test("--ask bash waits for a decision; a rejection shows as rejected; --deny refuses the tool", async () => {
  bashScenario("cli-ask");
  const sessionId = uniqueName("cli");
  const started = await keel([
    "run",
    "[scenario:cli-ask] check something",
    "--session",
    sessionId,
    "--ask",
    "bash",
    "--approval-timeout",
    "10m",
  ]);
  expect(started.code).toBe(0);
  const pending = await eventually(async () => {
    const view = await showJson(sessionId);
    return view.run?.pendingToolCalls.find((call: { state: string }) => call.state === "awaiting_approval");
  });
  expect(pending).toMatchObject({ name: "bash" });
  const waiting = await keel(["events", sessionId]);
  expect(waiting.stdout).toContain(
    `approve: keel approve ${sessionId} ${pending.toolCallId}    reject: keel approve ${sessionId} ${pending.toolCallId} --reject`,
  );
  const rejected = await keel(["approve", sessionId, pending.toolCallId, "--reject", "--reason", "not now"]);
  expect(rejected).toMatchObject({ code: 0, stdout: `rejected tool call ${pending.toolCallId}\n` });
  const followed = await keel(["events", sessionId, "--follow"]);
  expect(followed.code).toBe(0);
  expect(followed.stdout).toContain(`! tool call ${pending.toolCallId} rejected`);
  expect(followed.stdout).not.toContain("denied");
  const entries = await stage.entries({ tenantId: stage.tenantId, sessionId });
  expect(JSON.stringify(entries)).toContain("rejected by the user: not now");

  bashScenario("cli-deny");
  const denied = uniqueName("cli");
  const run = await keel([
    "run",
    "[scenario:cli-deny] check",
    "--session",
    denied,
    "--deny",
    "bash",
    "--follow",
  ]);
  expect(run.code).toBe(0);
  // The line says why, not only that it failed.
  expect(run.stdout).toMatch(/✗ bash \w+: .*denied by policy: bash is not allowed/);
  const deniedEntries = await stage.entries({ tenantId: stage.tenantId, sessionId: denied });
  expect(JSON.stringify(deniedEntries)).toContain("denied by policy: bash is not allowed");
});

test("a command's whole output is shown, live and after the fact, as it was stored", async () => {
  stage.llm.addScenario("cli-output", {
    turns: [
      {
        text: "Running it.",
        toolCalls: [
          { name: "bash", arguments: { command: "echo hello from bash; echo second line; echo last line" } },
        ],
      },
    ],
    after: { text: "Done." },
  });
  const sessionId = uniqueName("cli");
  const live = await keel(["run", "[scenario:cli-output] go", "--session", sessionId, "--follow"]);
  expect(live.code).toBe(0);
  expect(live.stdout).toMatch(/│ hello from bash\n {4}│ second line\n {4}│ last line\n {2}✓ bash completed/);
  const after = await keel(["events", sessionId]);
  expect(after.stdout).toMatch(/│ hello from bash\n {4}│ second line\n {4}│ last line\n {2}✓ bash completed/);
});

test("limits and hooks on the command line reach the run", async () => {
  bashScenario("cli-limits");
  const limited = uniqueName("cli");
  const run = await keel([
    "run",
    "[scenario:cli-limits] go",
    "--session",
    limited,
    "--max-turns",
    "1",
    "--follow",
  ]);
  expect(run.code).toBe(0);
  expect(await showJson(limited)).toMatchObject({
    run: { status: "completed", turn: 1, endReason: "turn limit reached (1)" },
  });

  bashScenario("cli-hooks");
  const hooked = uniqueName("cli");
  const hookedRun = await keel([
    "run",
    "[scenario:cli-hooks] go",
    "--session",
    hooked,
    "--hooks",
    "single-turn",
    "--follow",
  ]);
  expect(hookedRun.code).toBe(0);
  expect((await showJson(hooked)).run).toMatchObject({
    turn: 1,
    endReason: expect.stringMatching(/single-turn/),
  });

  const bad = await keel(["run", "x", "--max-turns", "0"]);
  expect(bad).toMatchObject({ code: 2, stderr: expect.stringMatching(/--max-turns must be an integer ≥ 1/) });
  const badTimeout = await keel(["run", "x", "--ask", "bash", "--approval-timeout", "soon"]);
  expect(badTimeout).toMatchObject({
    code: 2,
    stderr: expect.stringMatching(/--approval-timeout must be a duration/),
  });
});

test("entries, fork, branch --summarize, label and compact from the command line", async () => {
  const sessionId = uniqueName("cli");
  expect((await keel(["run", "first question", "--session", sessionId, "--follow"])).code).toBe(0);
  expect((await keel(["send", sessionId, "second question", "--follow"])).code).toBe(0);
  const listed = await keel(["entries", sessionId, "--json"]);
  const entries = JSON.parse(listed.stdout).entries as Array<{
    seq: number;
    entry: { id: string; type: string };
  }>;
  expect(entries.length).toBeGreaterThanOrEqual(4);
  const firstAnswer = entries[1]?.entry.id as string;
  const human = await keel(["entries", sessionId]);
  expect(human.stdout).toContain(
    `${firstAnswer}  message assistant: You said: first question`.replace(" message", ""),
  );

  const forked = await keel(["fork", sessionId, firstAnswer, "--json"]);
  expect(forked.code).toBe(0);
  expect(JSON.parse(forked.stdout)).toMatchObject({
    entryCount: 2,
    leafId: firstAnswer,
    parentSession: sessionId,
  });

  // The index `keel entries` prints before the id names the same entry, as does the id's start.
  const byIndex = await keel(["fork", sessionId, String(entries[1]?.seq), "--json"]);
  expect(byIndex.code).toBe(0);
  expect(JSON.parse(byIndex.stdout)).toMatchObject({ entryCount: 2, leafId: firstAnswer });
  const noSuchIndex = await keel(["fork", sessionId, "999"]);
  expect(noSuchIndex).toMatchObject({ code: 2, stderr: expect.stringMatching(/has no entry 999/) });

  const labelled = await keel(["label", sessionId, firstAnswer.slice(0, 8), "good answer"]);
  expect(labelled).toMatchObject({ code: 0, stdout: `labelled ${firstAnswer} "good answer"\n` });
  const afterLabel = JSON.parse((await keel(["entries", sessionId, "--json"])).stdout).entries;
  expect(afterLabel.at(-1).entry).toMatchObject({
    type: "label",
    targetId: firstAnswer,
    label: "good answer",
  });
  const missing = await keel(["label", sessionId, "no-such-entry", "x"]);
  expect(missing).toMatchObject({ code: 3, stderr: expect.stringMatching(/No such entry/) });

  const branched = await keel(["branch", sessionId, firstAnswer, "--summarize", "--json"]);
  expect(branched.code).toBe(0);
  expect(JSON.parse(branched.stdout)).toMatchObject({ sessionId, summarized: true });
  const stored = await stage.entries({ tenantId: stage.tenantId, sessionId });
  expect(stored.at(-1)).toMatchObject({ type: "branch_summary", parentId: firstAnswer });

  const compacted = await keel(["compact", sessionId, "--instructions", "keep the questions", "--json"]);
  expect(compacted.code).toBe(0);
  expect(JSON.parse(compacted.stdout)).toMatchObject({ sessionId, compacted: expect.any(Boolean) });
});

test("sessions are listed most recently active first", async () => {
  const older = uniqueName("cli-act");
  const newer = uniqueName("cli-act");
  expect((await keel(["run", "one", "--session", older, "--follow"])).code).toBe(0);
  // S3 keeps LastModified to the second.
  await sleep(1_100);
  expect((await keel(["run", "two", "--session", newer, "--follow"])).code).toBe(0);
  const order = async () => {
    const listed = await keel(["sessions", "--json"]);
    expect(listed.code).toBe(0);
    const ids = JSON.parse(listed.stdout).sessions.map((s: { sessionId: string }) => s.sessionId) as string[];
    return ids.filter((id) => id === older || id === newer);
  };
  expect(await order()).toEqual([newer, older]);
  await sleep(1_100);
  expect((await keel(["send", older, "again", "--follow"])).code).toBe(0);
  expect(await order()).toEqual([older, newer]);
  // The human listing: how the last turn ended, the cost, last activity, and the first prompt.
  const human = await keel(["sessions", "--limit", "1"]);
  expect(human.stdout).toMatch(new RegExp(`^${older}  completed  \\$\\d+\\.\\d{4}  last active \\d{4}-`));
  expect(human.stdout.split("\n")[1]).toBe("    “one”");
  const byId = await keel(["sessions", "--sort", "id", "--cursor", "x", "--sort", "activity"]);
  expect(byId).toMatchObject({ code: 2, stderr: expect.stringMatching(/--cursor pages in id order/) });
});

test("events --follow started before the session exists waits for it and follows its run", async () => {
  const sessionId = uniqueName("cli-later");
  const follower = spawnKeel(["events", sessionId, "--follow"], env);
  await eventually(
    async () =>
      follower.stderr().includes(`Waiting for session ${sessionId} to be created`) ? true : undefined,
    60_000,
    "the follower saying it waits for the session",
  );
  expect(follower.child.exitCode).toBeNull();
  expect((await keel(["run", "created later", "--session", sessionId])).code).toBe(0);
  expect(await follower.exited).toBe(0);
  expect(follower.stdout()).toContain("● You said: created later");
  expect(follower.stdout()).toContain("■ run completed");
});

test("steer on an idle session says that it started a run", async () => {
  const sessionId = uniqueName("cli");
  const result = await keel(["steer", sessionId, "are you there?"]);
  expect(result.code).toBe(0);
  expect(result.stdout).toContain(`session ${sessionId}: no run was live, so this message started a new run`);
  expect((await keel(["events", sessionId, "--follow"])).code).toBe(0);
});
