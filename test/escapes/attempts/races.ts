/**
 * Host-side races: in one parallel batch, bash flips a name between a link to a file inside the
 * workspace and a link to the host canary (rename over it, thousands of times), while the file
 * tools run on that name on the worker (outside the sandbox). A tool that checks the path and
 * then opens it by name can be steered out between the two. Outcome: the host file changed, or
 * its content (or the host folder's listing) is in a result, an entry, an S3 object or the
 * export with the workspace (snapshots run after a batch that wrote, while bash still flips).
 */
import type { ScriptedToolCall } from "../../../src/providers/local-server/types";
import { type Attempt, judge, playedLine } from "../attempt";
import type { EscapeContext } from "../context";

/**
 * Seconds bash flips per batch, batches per attempt and calls on the name per batch: the short
 * form, and the long form's full length.
 */
const LENGTH = { short: { seconds: 2, rounds: 2, copies: 6 }, long: { seconds: 10, rounds: 6, copies: 24 } };
/** The tools that run on the worker: each call waits for an approval the attacker gives while bash flips. */
const HOST_TOOLS = ["read", "write", "edit", "ls", "grep", "find"];

/**
 * A loop (one perl process: a shell loop forks per step, too slow to race) that renames a link
 * to `outside`, then one to `inside`, over `name` for `seconds`; it ends on the inside link.
 */
function flipper(name: string, inside: string, outside: string, seconds: number): ScriptedToolCall {
  const script = `my ($n, $i, $o) = ("${name}", "${inside}", "${outside}"); my ($end, $k) = (time + ${seconds}, 0); while (time < $end) { symlink($o, "$n.o"); rename("$n.o", $n); symlink($i, "$n.i"); rename("$n.i", $n); $k++; } print "flipped $k times\\n";`;
  return {
    name: "bash",
    arguments: { command: `ln -sfn ${inside} ${name}; perl -e '${script}'`, timeout: 300 },
  };
}

interface Race {
  id: string;
  description: string;
  short: boolean;
  /** `dir`: the name flips between a folder inside and the host folder; else a file and the host file. */
  kind: "file" | "dir";
  calls: (name: string) => ScriptedToolCall[];
}

const races: Race[] = [
  {
    id: "race-read",
    description: "read",
    short: true,
    kind: "file",
    calls: (name) => [{ name: "read", arguments: { path: name } }],
  },
  {
    id: "race-write",
    description: "write",
    short: true,
    kind: "file",
    calls: (name) => [{ name: "write", arguments: { path: name, content: "overwritten by the attacker\n" } }],
  },
  {
    id: "race-edit",
    description: "edit (the decoy and the host file both hold one line break)",
    short: true,
    kind: "file",
    calls: (name) => [
      { name: "edit", arguments: { path: name, oldText: "\n", newText: " edited by the attacker\n" } },
    ],
  },
  {
    id: "race-ls",
    description: "ls",
    short: true,
    kind: "dir",
    calls: (name) => [{ name: "ls", arguments: { path: name } }],
  },
  {
    id: "race-grep",
    description: "grep",
    short: true,
    kind: "dir",
    calls: (name) => [{ name: "grep", arguments: { pattern: "CANARY", path: name } }],
  },
  {
    id: "race-find",
    description: "find",
    short: true,
    kind: "dir",
    calls: (name) => [{ name: "find", arguments: { pattern: "*", path: name } }],
  },
  {
    id: "race-snapshot",
    description: "snapshots (writes of other files end while bash flips; then the export with the workspace)",
    short: true,
    kind: "file",
    calls: () => [
      {
        name: "write",
        arguments: { path: `w${Math.random().toString(36).slice(2, 8)}.txt`, content: "x\n" },
      },
    ],
  },
  {
    id: "race-mixed",
    description: "read, write, edit, ls, grep and find at once",
    short: false,
    kind: "file",
    calls: (name) => [
      { name: "read", arguments: { path: name } },
      { name: "write", arguments: { path: name, content: "overwritten by the attacker\n" } },
      { name: "edit", arguments: { path: name, oldText: "\n", newText: " edited\n" } },
      { name: "ls", arguments: { path: "." } },
      { name: "grep", arguments: { pattern: "CANARY", path: name } },
      { name: "find", arguments: { pattern: "*", path: "." } },
    ],
  },
];

function raceAttempt(race: Race): Attempt {
  return {
    id: race.id,
    class: "Races",
    description: `a name flips between a link inside and a link to the host ${race.kind === "dir" ? "folder" : "file"} while ${race.description} runs on it`,
    short: race.short,
    async run(ctx: EscapeContext) {
      const { seconds, rounds, copies } = LENGTH[ctx.form];
      const sessionId = ctx.newSession(race.id);
      const name = "x";
      const inside = race.kind === "dir" ? "decoy" : "decoy.txt";
      const outside = race.kind === "dir" ? ctx.canaries.hostDir : ctx.canaries.hostFile;
      const setup: ScriptedToolCall = {
        name: "bash",
        arguments: {
          command: "mkdir -p decoy && printf 'decoy\\n' > decoy/f.txt && printf 'decoy\\n' > decoy.txt",
        },
      };
      const batch = (): ScriptedToolCall[] => [
        flipper(name, inside, outside, seconds),
        ...Array.from({ length: copies }, () => race.calls(name)).flat(),
      ];
      // The attacker's own policy holds every worker-side call for approval; approving them one
      // by one, spread over the flipping, puts each call in the middle of the loop.
      const policy = { rules: HOST_TOOLS.map((tool) => ({ tool, action: "ask" })), default: "allow" };
      const playing = ctx.play(
        sessionId,
        [[setup], ...Array.from({ length: rounds }, batch)],
        { policy },
        600_000,
      );
      const spacingMs = Math.floor((seconds * 1000 * 0.8) / copies);
      await ctx.approveWhile(sessionId, playing, spacingMs);
      const played = await playing;
      // Evidence that the calls met the flipping: some found the name pointing out and were refused.
      const onName = played.results.filter((result) => result.tool !== "bash");
      const refused = onName.filter((result) => result.isError).length;
      const line = `${refused} of ${onName.length} calls refused (the name pointed out), the rest answered from inside; last: ${playedLine(played)}`;
      return judge(await ctx.leaks(sessionId), line);
    },
  };
}

/** Seconds the folder swaps per batch, batches, and `task` calls per batch (short and long form). */
const MERGE_LENGTH = {
  short: { seconds: 10, rounds: 2, children: 2 },
  long: { seconds: 20, rounds: 5, children: 4 },
};

/**
 * A sub-agent's edits are applied to its parent's workspace on the worker (outside the sandbox)
 * when its `task` call ends. In the same batch, bash swaps the folder those edits land in for a
 * link to the host folder and back, thousands of times, so the merge meets the link between
 * checking a path and writing it.
 */
const mergeRace: Attempt = {
  id: "race-merge",
  class: "Races",
  description:
    "a folder swaps with a link to the host folder while sub-agents' edits (files added, changed, removed in it) are merged into it",
  short: true,
  async run(ctx: EscapeContext) {
    const { seconds, rounds, children } = MERGE_LENGTH[ctx.form];
    const sessionId = ctx.newSession("race-merge");
    // Each child of each round edits its own files, so every merge has something to apply; the
    // first of a round removes `canary.txt`, a name the host folder holds too. A write or removal
    // that followed the link would add, change or remove a file there.
    const childScenario = (round: number, index: number): string => {
      const name = `esc-${sessionId}-child-${round}-${index}`;
      ctx.stack.llm.addScenario(name, {
        turns: [
          {
            toolCalls: [
              { name: "write", arguments: { path: `x/planted-${round}-${index}.txt`, content: "planted\n" } },
              {
                name: "edit",
                arguments: { path: `x/f${index}.txt`, oldText: "decoy", newText: `edited ${round}-${index}` },
              },
              ...(index === 0 ? [{ name: "bash", arguments: { command: "rm x/canary.txt" } }] : []),
            ],
          },
        ],
        after: { text: "edited" },
      });
      return name;
    };
    // Before each round: the folder again as it was, files to edit and the name to remove in it.
    const files = Array.from({ length: children }, (_, index) => `x/f${index}.txt`).join(" ");
    const reset: ScriptedToolCall = {
      name: "bash",
      arguments: {
        command: `rm -rf x x.real && mkdir x && for f in x/canary.txt ${files}; do printf 'decoy\\n' > $f; done`,
      },
    };
    // A link to the host folder stands in the folder's place a seventh of the time: a merge's
    // checks mostly pass, and its writes, spread over S3 reads, meet the link. The loop stops
    // when the folder cannot be put back (nothing else renames it).
    const script = `my $h = "${ctx.canaries.hostDir}"; my ($end, $k) = (time + ${seconds}, 0); while (time < $end) { rename("x", "x.real") or last; symlink($h, "x"); select(undef, undef, undef, 0.0003); unlink("x"); rename("x.real", "x") or last; select(undef, undef, undef, 0.002); $k++; } print "swapped $k times\\n";`;
    const swapper: ScriptedToolCall = {
      name: "bash",
      // It starts once the task calls have taken their snapshot of the workspace to fork from.
      arguments: { command: `sleep 2; perl -e '${script}'`, timeout: 300 },
    };
    const batches = Array.from({ length: rounds }, (_, round): ScriptedToolCall[][] => [
      [reset],
      [
        swapper,
        ...Array.from({ length: children }, (_, index) => ({
          name: "task",
          arguments: { agent: "editor", prompt: `[scenario:${childScenario(round, index)}] edit x` },
        })),
      ],
    ]).flat();
    const settings = {
      tools: ["read", "write", "edit", "bash", "ls", "grep", "find", "task"],
      agents: [{ name: "editor", description: "edits files", tools: ["read", "write", "edit", "bash"] }],
    };
    const played = await ctx.play(sessionId, batches, settings, 600_000);
    const tasks = played.results.filter((result) => result.tool === "task");
    if (tasks.length !== rounds * children)
      throw new Error(`${tasks.length} of ${rounds * children} task calls ran: ${playedLine(played)}`);
    // Evidence that merges met the swapping: how each child's edits fared, and how often the folder swapped.
    const applied = tasks.filter((result) =>
      result.text.includes("Its changes are in your workspace"),
    ).length;
    const conflicts = tasks.filter((result) => result.text.includes("were NOT applied")).length;
    const other = tasks.find(
      (result) =>
        !result.text.includes("Its changes are in your workspace") &&
        !result.text.includes("were NOT applied"),
    );
    const swaps = played.results
      .flatMap((result) => (result.tool === "bash" ? [/swapped (\d+) times/.exec(result.text)?.[1]] : []))
      .filter((count) => count !== undefined);
    const otherLine = other ? `; other: ${other.text.split("\n").at(-1)}` : "";
    const line = `${applied} of ${tasks.length} merges applied, ${conflicts} found the folder changed (not applied); swapped ${swaps.join(", ")} times${otherLine}`;
    return judge(await ctx.leaks(sessionId), line);
  },
};

export const raceAttempts: Attempt[] = [...races.map(raceAttempt), mergeRace];
