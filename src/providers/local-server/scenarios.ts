/**
 * Scenario selection and turn resolution.
 *
 * Determinism contract: the reply is a pure function of the request. The scenario comes from
 * the `x-keel-scenario` header or a `[scenario:name]` marker in the system prompt or first
 * user message (else "default"); the turn index is the number of assistant messages already
 * in the request. A retried request therefore gets the same reply, tool-call ids included,
 * and no server-side counter is involved.
 */
import { EMPTY_DIRECTORY_LISTING } from "../../tools/truncate";
import type { NormalizedRequest, Scenario, Turn, TurnContext, TurnSource } from "./types";

export const DEFAULT_SCENARIO = "default";
export const SCENARIO_HEADER = "x-keel-scenario";
const SCENARIO_MARKER = /\[scenario:([A-Za-z0-9_.-]+)\]/;
const EXHAUSTED_TEXT = "That completes the scripted conversation.";
const RESULT_PREVIEW_CHARS = 200;

export function scenarioNameOf(request: NormalizedRequest): string {
  const header = request.headers[SCENARIO_HEADER];
  if (header) return header;
  const firstUser = request.messages.find((message) => message.role === "user");
  const marker = SCENARIO_MARKER.exec(request.system) ?? SCENARIO_MARKER.exec(firstUser?.text ?? "");
  return marker?.[1] ?? DEFAULT_SCENARIO;
}

export function turnIndexOf(request: NormalizedRequest): number {
  return request.messages.filter((message) => message.role === "assistant").length;
}

function lastUserText(request: NormalizedRequest): string {
  const last = request.messages.findLast((message) => message.role === "user");
  return last?.text ?? "";
}

function lastToolResultText(request: NormalizedRequest): string {
  const last = request.messages.findLast((message) => message.role === "tool");
  return last?.text ?? "";
}

function fill(template: string, context: TurnContext): string {
  return template
    .replaceAll("{{lastUser}}", lastUserText(context.request).replace(SCENARIO_MARKER, "").trim())
    .replaceAll("{{lastToolResult}}", lastToolResultText(context.request))
    .replaceAll("{{turn}}", String(context.turn));
}

function resolveSource(source: TurnSource, context: TurnContext): Turn {
  const turn = typeof source === "function" ? source(context) : source;
  return {
    ...turn,
    ...(turn.text !== undefined ? { text: fill(turn.text, context) } : {}),
    ...(turn.thinking !== undefined ? { thinking: fill(turn.thinking, context) } : {}),
  };
}

/** The reply `scenario` gives at `context.turn`. */
export function resolveTurn(scenario: Scenario, context: TurnContext): Turn {
  const source = scenario.turns[context.turn] ?? scenario.after ?? { text: EXHAUSTED_TEXT };
  return resolveSource(source, context);
}

/** Catch-all: echoes the last user message, or acknowledges the last tool result. */
const defaultScenario: Scenario = {
  turns: [],
  after: ({ request }) => {
    const last = request.messages.at(-1);
    if (last?.role === "tool") {
      return { text: `Tool result received: ${last.text.slice(0, RESULT_PREVIEW_CHARS)}` };
    }
    return { text: "You said: {{lastUser}}" };
  },
};

/** The one line that tells a person how to make the local model do more. */
export const SCENARIO_HINT =
  "(Keel's local model plays scripted scenarios: put [scenario:demo] in a prompt to watch it read and edit a file.)";

/**
 * The default of the local stack (`keel dev`): a quick start that does visible agent work —
 * list the workspace with the `ls` tool, then report what is there and how to pick a scenario —
 * and echoes after that. Tests keep the plain echo (`defaultScenario`) as their default.
 */
export const quickstartScenario: Scenario = {
  turns: [
    { text: "I'll list the files in the workspace.", toolCalls: [{ name: "ls", arguments: { path: "." } }] },
    { text: `The workspace holds:\n{{lastToolResult}}\n\n${SCENARIO_HINT}` },
  ],
  after: { text: `You said: {{lastUser}}\n\n${SCENARIO_HINT}` },
};

const DEMO_NOTE =
  "> Touched by the Keel demo: this line was added by an agent running in a Temporal workflow.";

/**
 * Picks the file to read from an `ls` listing: README first, then any Markdown file, then any
 * file; none from the listing of an empty directory, which names no file.
 */
function pickFile(listing: string): string | undefined {
  if (listing.trim() === EMPTY_DIRECTORY_LISTING) return undefined;
  const files = listing
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line && !line.endsWith("/") && !line.startsWith("["));
  return (
    files.find((file) => /^readme(\.md)?$/i.test(file)) ??
    files.find((file) => file.endsWith(".md")) ??
    files[0]
  );
}

function pathOfLastCall(context: TurnContext): string {
  const last = context.request.messages.findLast((message) => message.role === "assistant");
  const path = last?.role === "assistant" ? last.toolCalls[0]?.arguments.path : undefined;
  return typeof path === "string" ? path : "";
}

/**
 * The keyless demo: a small coding task played against whatever workspace the agent has —
 * list the files, read one, add a note under its first line, report.
 */
const demoScenario: Scenario = {
  turns: [
    {
      thinking: "The user wants a small change. I should look at the workspace before editing anything.",
      text: "Let me look at the workspace first.",
      toolCalls: [{ name: "ls", arguments: { path: "." } }],
    },
    ({ request }) => {
      const file = pickFile(lastToolResultText(request));
      if (!file) return { text: "The workspace is empty, so there is nothing to edit yet." };
      return { text: `I'll read ${file}.`, toolCalls: [{ name: "read", arguments: { path: file } }] };
    },
    (context) => {
      const path = pathOfLastCall(context);
      const firstLine = lastToolResultText(context.request)
        .split("\n")
        .find((line) => line.trim());
      if (!firstLine) {
        return {
          text: `${path} is empty; I'll give it a first line.`,
          toolCalls: [{ name: "write", arguments: { path, content: `${DEMO_NOTE}\n` } }],
        };
      }
      return {
        text: `I'll add a short note below the first line of ${path}.`,
        toolCalls: [
          {
            name: "edit",
            // Keel's edit tool: one replacement per call, `{path, oldText, newText}`.
            arguments: { path, oldText: firstLine, newText: `${firstLine}\n\n${DEMO_NOTE}` },
          },
        ],
      };
    },
    (context) => ({
      text: `Done. I listed the workspace, read ${pathOfLastCall(context)} and added a note below its first line. The edit tool reported: {{lastToolResult}}`,
    }),
  ],
  after: { text: "The demo task is complete. Ask me something else and I will echo it: {{lastUser}}" },
};

export function builtinScenarios(): Map<string, Scenario> {
  return new Map([
    [DEFAULT_SCENARIO, defaultScenario],
    ["demo", demoScenario],
  ]);
}
