/**
 * `keel eval case-from` (a suite case from a stored session: its request, on the files it had)
 * and `keel eval import-swebench` (a suite from SWE-bench-style task instances); both print a
 * suite file's JSON (docs/evals.md).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { EXIT, type ExitCode, UsageError } from "../../api-client/client";
import { caseFromSweInstance, type FileCase, SweInstanceSchema } from "../../evals/suite-file";
import { type CommandContext, integerOption, listOption, parseCommand, printJson } from "../command";
import { storedEntries } from "../session-entries";
import { entryIdOf } from "./tree";

type EntryRecord = {
  id: string;
  type: string;
  parentId?: string | null;
  message?: { role: string; content: unknown };
};

/** The text of a user message's content (a string, or its text blocks). */
function userText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .flatMap((block: { type?: string; text?: string }) =>
      block.type === "text" && block.text ? [block.text] : [],
    )
    .join("\n");
}

export async function caseFrom(argv: string[], context: CommandContext): Promise<ExitCode> {
  const parsed = parseCommand(
    argv,
    { entry: { type: "string" }, check: { type: "string", multiple: true }, id: { type: "string" } },
    { min: 1, max: 1, names: "SESSION" },
    context,
  );
  const sessionId = parsed.positionals[0] as string;
  const { client } = parsed;
  const entries: EntryRecord[] = [];
  for await (const { entry } of storedEntries(client, sessionId))
    entries.push(entry as unknown as EntryRecord);
  const entryArg = parsed.values.entry;
  // The request: the given entry (a user message) or the session's first user message.
  const requestId = typeof entryArg === "string" ? await entryIdOf(client, sessionId, entryArg) : undefined;
  const request = requestId
    ? entries.find((entry) => entry.id === requestId)
    : entries.find((entry) => entry.type === "message" && entry.message?.role === "user");
  if (request?.type !== "message" || request.message?.role !== "user")
    throw new UsageError(
      requestId ? `entry ${requestId} is not a user message` : `session ${sessionId} has no request`,
    );
  // The checks: given by hand, else the last bash command the session ran after the request.
  let checks = listOption(parsed.values.check);
  if (checks.length === 0) {
    const after = entries.slice(entries.indexOf(request));
    const commands = after.flatMap((entry) =>
      entry.type === "message" && entry.message?.role === "assistant" && Array.isArray(entry.message.content)
        ? (
            entry.message.content as { type: string; name?: string; arguments?: { command?: unknown } }[]
          ).flatMap((block) =>
            block.type === "toolCall" && block.name === "bash" && typeof block.arguments?.command === "string"
              ? [block.arguments.command]
              : [],
          )
        : [],
    );
    const last = commands.at(-1);
    if (last === undefined)
      throw new UsageError(
        "the session ran no bash command after the request: give the check with --check CMD",
      );
    checks = [last];
  }
  const evalCase: FileCase = {
    id:
      typeof parsed.values.id === "string"
        ? parsed.values.id
        : `${sessionId.slice(0, 40)}-${request.id.slice(0, 8)}`,
    prompt: userText(request.message.content),
    // The files as they were when the request came: the state at the entry before it.
    workspace: request.parentId
      ? { type: "session", sessionId, entryId: request.parentId }
      : { type: "empty" },
    checks: checks.map((command) => ({ type: "command" as const, command })),
  };
  printJson(context, evalCase);
  return EXIT.ok;
}

export async function importSwebench(argv: string[], context: CommandContext): Promise<ExitCode> {
  const parsed = parseCommand(
    argv,
    {
      repos: { type: "string" },
      "test-cmd": { type: "string" },
      timeout: { type: "string" },
      name: { type: "string" },
    },
    { min: 1, max: 1, names: "TASKS.jsonl" },
    context,
  );
  const repoRoot = parsed.values.repos;
  if (typeof repoRoot !== "string")
    throw new UsageError("--repos DIR: the folder holding each instance's repository at {DIR}/{repo}");
  const testCommand =
    typeof parsed.values["test-cmd"] === "string" ? parsed.values["test-cmd"] : "python -m pytest {tests}";
  const timeoutSeconds = integerOption(
    typeof parsed.values.timeout === "string" ? parsed.values.timeout : undefined,
    "--timeout",
    1,
  );
  const file = parsed.positionals[0] as string;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
  }
  const cases: FileCase[] = [];
  for (const [index, line] of text.split("\n").entries()) {
    if (line.trim() === "") continue;
    let instance: ReturnType<typeof SweInstanceSchema.parse>;
    try {
      instance = SweInstanceSchema.parse(JSON.parse(line));
    } catch (error) {
      throw new UsageError(`${file} line ${index + 1} is not a task instance: ${(error as Error).message}`);
    }
    cases.push(
      caseFromSweInstance(instance, {
        repoRoot: path.resolve(repoRoot),
        testCommand,
        ...(timeoutSeconds ? { timeoutSeconds } : {}),
      }),
    );
  }
  if (cases.length === 0) throw new UsageError(`${file} holds no task instance`);
  printJson(context, {
    name: typeof parsed.values.name === "string" ? parsed.values.name : path.basename(file),
    cases,
  });
  return EXIT.ok;
}
