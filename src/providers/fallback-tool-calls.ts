/**
 * Fallback for models that write tool calls as text instead of structured calls.
 *
 * Recognised forms, in order:
 * - `<tool_call>{"name": …, "arguments": …}</tool_call>` (Hermes / Qwen style);
 * - `<function=name>{…json…}</function>` and `<function=name><parameter=p>v</parameter></function>`;
 * - fenced code blocks (```json, ```tool_call or unlabelled) holding a call object or an array of them;
 * - a reply that is nothing but a call object or an array of them.
 * A call object is `{name, arguments}` / `{name, parameters}` / `{tool, args}` /
 * `{function: {name, arguments}}`; arguments may be an object or a JSON string of one.
 * Names must look like identifiers and be among the offered tools; anything else is ignored,
 * so prose that merely shows JSON does not become an action.
 */
import type { ToolCallBlock } from "../core/messages";

const TOOL_NAME_PATTERN = /^[a-zA-Z_][a-zA-Z0-9_.-]{0,63}$/;

const TOOL_CALL_TAG = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;
const FUNCTION_TAG = /<function=([^>\s]+)>\s*([\s\S]*?)\s*<\/function>/g;
const PARAMETER_TAG = /<parameter=([^>\s]+)>\n?([\s\S]*?)\n?<\/parameter>/g;
const CODE_FENCE = /```(json|tool_call|tool_code)?[ \t]*\n([\s\S]*?)\n?```/g;

type Json = unknown;

function parseJson(text: string): Json | undefined {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function asRecord(value: Json): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

function argumentsFrom(value: unknown): Record<string, unknown> | undefined {
  if (value === undefined) return undefined;
  return asRecord(typeof value === "string" ? parseJson(value) : value);
}

interface ParsedCall {
  name: string;
  arguments: Record<string, unknown>;
}

/** Reads one call object in any of the accepted shapes. */
function callFromObject(value: Json): ParsedCall | undefined {
  const record = asRecord(value);
  if (!record) return undefined;
  const inner = asRecord(record.function);
  if (inner) return callFromObject(inner);
  const name = record.name ?? record.tool ?? record.tool_name;
  const args = argumentsFrom(record.arguments ?? record.parameters ?? record.args ?? record.input);
  if (typeof name !== "string" || !args) return undefined;
  return { name, arguments: args };
}

function callsFromJson(value: Json): ParsedCall[] {
  const items = Array.isArray(value) ? value : [value];
  const calls = items.map(callFromObject);
  // All or nothing: an array mixing calls and other data is data, not a batch of calls.
  return calls.every((call) => call !== undefined) ? (calls as ParsedCall[]) : [];
}

function functionTagCall(name: string, body: string): ParsedCall | undefined {
  const trimmed = body.trim();
  if (trimmed.startsWith("{")) {
    const args = argumentsFrom(parseJson(trimmed));
    return args ? { name, arguments: args } : undefined;
  }
  const args: Record<string, unknown> = {};
  for (const match of trimmed.matchAll(PARAMETER_TAG)) {
    const raw = match[2] ?? "";
    const parsed = parseJson(raw);
    args[match[1]!] = typeof parsed === "number" || typeof parsed === "boolean" ? parsed : raw;
  }
  return Object.keys(args).length > 0 || trimmed === "" ? { name, arguments: args } : undefined;
}

function candidateCalls(text: string): ParsedCall[] {
  const tagged = [...text.matchAll(TOOL_CALL_TAG)].flatMap((match) => {
    const json = parseJson(match[1] ?? "");
    return json === undefined ? [] : callsFromJson(json);
  });
  if (tagged.length > 0) return tagged;

  const functions = [...text.matchAll(FUNCTION_TAG)].flatMap((match) => {
    const call = functionTagCall(match[1]!, match[2] ?? "");
    return call ? [call] : [];
  });
  if (functions.length > 0) return functions;

  const fenced = [...text.matchAll(CODE_FENCE)].flatMap((match) => {
    const json = parseJson(match[2] ?? "");
    return json === undefined ? [] : callsFromJson(json);
  });
  if (fenced.length > 0) return fenced;

  const trimmed = text.trim();
  if (!trimmed.startsWith("{") && !trimmed.startsWith("[")) return [];
  const whole = parseJson(trimmed);
  return whole === undefined ? [] : callsFromJson(whole);
}

/**
 * Tool calls written in `text`, with ids from `newId`. Calls whose name is malformed or not
 * among `offeredTools` are dropped. Returns [] when nothing parses.
 */
export function parseTextToolCalls(
  text: string,
  offeredTools: readonly string[],
  newId: () => string,
): ToolCallBlock[] {
  const offered = new Set(offeredTools);
  return candidateCalls(text)
    .filter((call) => TOOL_NAME_PATTERN.test(call.name) && offered.has(call.name))
    .map((call) => ({ type: "toolCall", id: newId(), name: call.name, arguments: call.arguments }));
}
