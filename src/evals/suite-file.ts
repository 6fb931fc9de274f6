/**
 * The suite file the CLI reads (`keel eval run SUITE.json`): the API's suite, whose cases may name
 * where their files come from on this machine — a directory, an archive, a commit of a local git
 * repository — or a stored session's entry, or a git URL the workers clone. `keel eval run`
 * uploads the local ones as sessions and sends the API's form (docs/evals.md). Also the mapping
 * of SWE-bench-style task instances to cases. Pure: no I/O here.
 */
import { z } from "zod";
import { ID_PATTERN } from "../core/ids";
import { EvalCheckSchema } from "./types";

/** Where a case's files come from, as a suite file names them (paths relative to the file). */
const CaseWorkspaceSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("empty") }).strict(),
  z.object({ type: z.literal("directory"), path: z.string().min(1) }).strict(),
  z.object({ type: z.literal("archive"), path: z.string().min(1) }).strict(),
  z
    .object({
      type: z.literal("git"),
      /** A local repository (no network needed): the files of `commit`, in a fresh repository. */
      path: z.string().min(1).optional(),
      /** A remote repository the workers clone (a host the deployment allows); `ref` a branch or tag. */
      url: z.string().min(1).optional(),
      commit: z.string().min(1).max(256).optional(),
      ref: z.string().min(1).max(256).optional(),
    })
    .strict()
    .refine((git) => (git.path === undefined) !== (git.url === undefined), "name either `path` or `url`")
    .refine((git) => git.path === undefined || git.commit !== undefined, "a local repository needs `commit`"),
  z
    .object({
      type: z.literal("session"),
      sessionId: z.string().regex(ID_PATTERN),
      entryId: z.string().min(1),
    })
    .strict(),
]);
export type CaseWorkspace = z.infer<typeof CaseWorkspaceSchema>;

const FileCaseSchema = z
  .object({
    id: z.string().regex(ID_PATTERN, `case ids match ${ID_PATTERN.source}`),
    prompt: z.string().min(1),
    workspace: CaseWorkspaceSchema.optional(),
    settings: z.record(z.string(), z.unknown()).optional(),
    checks: z.array(EvalCheckSchema).default([]),
  })
  .strict();
export type FileCase = z.infer<typeof FileCaseSchema>;

export const SuiteFileSchema = z
  .object({
    $schema: z.string().optional(),
    name: z.string().min(1).max(200).optional(),
    settings: z.record(z.string(), z.unknown()).optional(),
    cases: z
      .array(FileCaseSchema)
      .min(1)
      .refine((cases) => new Set(cases.map((c) => c.id)).size === cases.length, "case ids must be unique"),
  })
  .strict();
export type SuiteFile = z.infer<typeof SuiteFileSchema>;

/** The suite file's JSON Schema (docs/eval-suite.schema.json is this, written by `keel eval schema`). */
export function suiteFileJsonSchema(): unknown {
  return z.toJSONSchema(SuiteFileSchema, { io: "input", unrepresentable: "any" });
}

/**
 * A SWE-bench-style task instance (a line of the JSONL a dataset is exported as). The lists of
 * tests may be JSON-encoded strings, as the published datasets hold them.
 */
const TestListSchema = z
  .union([z.array(z.string()), z.string()])
  .transform((value) => (typeof value === "string" ? (JSON.parse(value) as unknown) : value))
  .pipe(z.array(z.string()));

export const SweInstanceSchema = z
  .object({
    instance_id: z.string().min(1),
    repo: z.string().min(1),
    base_commit: z.string().min(1),
    problem_statement: z.string().min(1),
    test_patch: z.string().optional(),
    FAIL_TO_PASS: TestListSchema,
    PASS_TO_PASS: TestListSchema.optional(),
    /** Not in the published datasets: the command that runs the named tests (`{tests}` is replaced). */
    test_cmd: z.string().min(1).optional(),
  })
  .passthrough();
export type SweInstance = z.infer<typeof SweInstanceSchema>;

/** A case id from an instance id: characters ids may not hold become `-`. */
export function caseIdOf(instanceId: string): string {
  const id = instanceId.replace(/[^A-Za-z0-9_-]/g, "-").replace(/^[^A-Za-z0-9]+/, "");
  return (id || "case").slice(0, 128);
}

const shellQuote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

/** End of the test patch's here-document (a line the patch cannot hold as it is). */
const PATCH_END = "END_OF_EVAL_TEST_PATCH";

/**
 * The case of one instance: the repository (`{repoRoot}/{repo}`, its `base_commit`) as the
 * files, the problem statement as the prompt, and checks that apply the test patch and run the
 * tests that must pass — `FAIL_TO_PASS` (failing before the fix) and `PASS_TO_PASS` (passing
 * before and after) — with `testCommand` (`{tests}` stands for the quoted test names).
 */
export function caseFromSweInstance(
  instance: SweInstance,
  options: { repoRoot: string; testCommand: string; timeoutSeconds?: number },
): FileCase {
  const command = instance.test_cmd ?? options.testCommand;
  const run = (tests: string[]) => command.replaceAll("{tests}", tests.map(shellQuote).join(" "));
  const apply =
    instance.test_patch && instance.test_patch.trim() !== ""
      ? `git apply --whitespace=nowarn - <<'${PATCH_END}'\n${instance.test_patch.endsWith("\n") ? instance.test_patch : `${instance.test_patch}\n`}${PATCH_END}\n`
      : "";
  const timeout = options.timeoutSeconds !== undefined ? { timeoutSeconds: options.timeoutSeconds } : {};
  const checks: FileCase["checks"] = [
    { type: "command", command: `${apply}${run(instance.FAIL_TO_PASS)}`, ...timeout },
  ];
  if (instance.PASS_TO_PASS && instance.PASS_TO_PASS.length > 0)
    checks.push({ type: "command", command: `${apply}${run(instance.PASS_TO_PASS)}`, ...timeout });
  return {
    id: caseIdOf(instance.instance_id),
    prompt: instance.problem_statement,
    workspace: {
      type: "git",
      path: `${options.repoRoot.replace(/\/+$/, "")}/${instance.repo}`,
      commit: instance.base_commit,
    },
    checks,
  };
}
