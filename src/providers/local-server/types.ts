/**
 * Types of the local wire-compatible LLM server: normalised requests, scripted turns,
 * scenarios, faults and journal entries.
 */

export type WireApi = "openai-completions" | "openai-responses" | "anthropic-messages";

export interface NormalizedToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

/** One message of a request, whatever wire it came from. */
export type NormalizedMessage =
  | { role: "user"; text: string }
  | { role: "assistant"; text: string; toolCalls: NormalizedToolCall[] }
  | { role: "tool"; toolCallId: string; text: string };

/** A request reduced to what scenarios look at. */
export interface NormalizedRequest {
  api: WireApi;
  model: string;
  stream: boolean;
  system: string;
  messages: NormalizedMessage[];
  /** Names of the offered tools. */
  tools: string[];
  /** True when thinking / reasoning was requested. */
  thinking: boolean;
  /** Request headers, lower-cased names. */
  headers: Record<string, string>;
}

export interface ScriptedToolCall {
  name: string;
  arguments: Record<string, unknown>;
  /**
   * The tool-call id to send (Chat `id`, Responses `call_id`, Anthropic `id`), verbatim — e.g.
   * `call_0` on every turn, as some OpenAI-compatible servers do. Default: derived from the
   * scenario, first user message, turn and position, so it differs per turn.
   */
  id?: string;
}

export interface TurnUsage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/**
 * One assistant reply. `text` and `thinking` may contain placeholders filled from the request:
 * `{{lastUser}}`, `{{lastToolResult}}`, `{{turn}}`.
 */
export interface Turn {
  thinking?: string;
  text?: string;
  toolCalls?: ScriptedToolCall[];
  /** Exact usage to report; by default it is estimated from the request and reply sizes. */
  usage?: Partial<TurnUsage>;
  /** "length" reports a max-tokens stop; "refusal" a refusal / content-filter stop. */
  stopReason?: "stop" | "length" | "refusal";
  /**
   * A recorded response replayed byte for byte instead of a reply built from the fields above
   * (wire conformance: providers' documented examples, other servers' captures). Neither the
   * request's wire nor its `stream` flag is checked against it.
   */
  raw?: RawResponse;
}

/** An HTTP response exactly as it is to be sent. */
export interface RawResponse {
  /** Default 200. */
  status?: number;
  /** Added to `content-type`: `text/event-stream` when the body starts with `event:` or `data:`, else JSON. */
  headers?: Record<string, string>;
  body: string;
}

export interface TurnContext {
  request: NormalizedRequest;
  /** Zero-based index of the reply: the number of assistant messages in the request. */
  turn: number;
  scenario: string;
}

/** A scripted turn, or a rule computing one from the request. */
export type TurnSource = Turn | ((context: TurnContext) => Turn);

export interface Scenario {
  /** Replies in order; reply N answers a request that already holds N assistant messages. */
  turns: TurnSource[];
  /** Reply once `turns` is exhausted (default: a short closing text). */
  after?: TurnSource;
}

export type FaultKind =
  | "rate_limit"
  | "server_error"
  | "overloaded"
  | "context_overflow"
  | "unauthorized"
  | "bad_request"
  | "hang"
  | "cut_stream"
  | "slow";

interface FaultMatch {
  path?: string;
  model?: string;
  scenario?: string;
  turn?: number;
}

export interface Fault {
  kind: FaultKind;
  /** Only requests matching every given field are affected. */
  match?: FaultMatch;
  /** How many matching requests to affect (default: 1). Use `rate` for a probabilistic fault. */
  times?: number;
  /** Probability (0..1) that a matching request is affected; unlimited times. */
  rate?: number;
  /** `rate_limit` / `overloaded`: value of the `retry-after` header in seconds (default 1). */
  retryAfterSeconds?: number;
  /** `cut_stream`: number of SSE events sent before the connection is destroyed (default 3). */
  cutAfterEvents?: number;
  /** `slow`: delay before the response starts. */
  latencyMs?: number;
  /** `slow`: streaming pace. */
  tokensPerSecond?: number;
}

export interface JournalEntry {
  seq: number;
  /** ISO time the request arrived. */
  time: string;
  path: string;
  api: WireApi;
  model: string;
  stream: boolean;
  scenario: string;
  turn: number;
  /** sha256 prefix of the normalised system prompt, messages and tools. */
  digest: string;
  /** Injected fault, if any. */
  fault?: FaultKind;
  status: number;
  /** How the exchange ended. */
  outcome: "completed" | "error" | "cut" | "client_closed" | "pending";
  /** The raw request body, when the server was started with `journalBodies`. */
  body?: unknown;
  /** Epoch ms at which each streamed delta was written (latency measurements), in order. */
  deltaSentAt?: number[];
}
