/**
 * Fault injection: which fault (if any) a request gets, and the error reply each fault sends.
 */
import type { Fault, FaultKind, NormalizedRequest, WireApi } from "./types";
import { type ErrorReply, errorReply } from "./wire";

/** Per-request faults: `x-keel-fault: rate_limit` (one kind). */
export const FAULT_HEADER = "x-keel-fault";
const DEFAULT_RETRY_AFTER_SECONDS = 1;
export const DEFAULT_CUT_AFTER_EVENTS = 3;

export const FAULT_KINDS = [
  "rate_limit",
  "server_error",
  "overloaded",
  "context_overflow",
  "unauthorized",
  "bad_request",
  "hang",
  "cut_stream",
  "slow",
] as const satisfies readonly FaultKind[];
const FAULT_KIND_SET: ReadonlySet<string> = new Set(FAULT_KINDS);

function isFaultKind(value: string): value is FaultKind {
  return FAULT_KIND_SET.has(value);
}

export interface FaultTarget {
  path: string;
  request: NormalizedRequest;
  scenario: string;
  turn: number;
}

function matches(fault: Fault, target: FaultTarget): boolean {
  const match = fault.match ?? {};
  return (
    (match.path === undefined || match.path === target.path) &&
    (match.model === undefined || match.model === target.request.model) &&
    (match.scenario === undefined || match.scenario === target.scenario) &&
    (match.turn === undefined || match.turn === target.turn)
  );
}

/** Loaded faults with their remaining budgets. */
export class FaultPlan {
  private entries: { fault: Fault; remaining: number }[] = [];

  constructor(private readonly random: () => number) {}

  add(faults: Fault[]): void {
    for (const fault of faults) this.entries.push({ fault, remaining: fault.times ?? 1 });
  }

  clear(): void {
    this.entries = [];
  }

  list(): Fault[] {
    return this.entries
      .filter((entry) => entry.fault.rate !== undefined || entry.remaining > 0)
      .map((e) => e.fault);
  }

  /** The fault for this request: the header first, then the first loaded fault that fires. */
  pick(target: FaultTarget): Fault | undefined {
    const header = target.request.headers[FAULT_HEADER];
    if (header && isFaultKind(header)) return { kind: header };
    for (const entry of this.entries) {
      if (!matches(entry.fault, target)) continue;
      if (entry.fault.rate !== undefined) {
        if (this.random() < entry.fault.rate) return entry.fault;
        continue;
      }
      if (entry.remaining <= 0) continue;
      entry.remaining -= 1;
      return entry.fault;
    }
    return undefined;
  }
}

/** Each provider's own wording of a context overflow. */
function contextOverflowReply(api: WireApi): ErrorReply {
  if (api === "anthropic-messages") {
    return errorReply(
      api,
      400,
      "invalid_request_error",
      "prompt is too long: 215321 tokens > 200000 maximum",
    );
  }
  if (api === "openai-responses") {
    return errorReply(
      api,
      400,
      "invalid_request_error",
      "Your input exceeds the context window of this model. Please adjust your input and try again.",
      "context_length_exceeded",
    );
  }
  return errorReply(
    api,
    400,
    "invalid_request_error",
    "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
    "context_length_exceeded",
  );
}

/** The HTTP error a fault answers with, or undefined for faults that are not error replies. */
export function faultErrorReply(api: WireApi, fault: Fault): ErrorReply | undefined {
  const anthropic = api === "anthropic-messages";
  const retryAfter = { "retry-after": String(fault.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS) };
  switch (fault.kind) {
    case "rate_limit":
      return anthropic
        ? errorReply(
            api,
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your rate limit.",
            undefined,
            retryAfter,
          )
        : errorReply(
            api,
            429,
            "requests",
            "Rate limit reached for requests.",
            "rate_limit_exceeded",
            retryAfter,
          );
    case "server_error":
      return anthropic
        ? errorReply(api, 500, "api_error", "Internal server error")
        : errorReply(api, 500, "server_error", "The server had an error while processing your request.");
    case "overloaded":
      return anthropic
        ? errorReply(api, 529, "overloaded_error", "Overloaded", undefined, retryAfter)
        : errorReply(
            api,
            503,
            "server_error",
            "The engine is currently overloaded, please try again later.",
            "server_is_overloaded",
            retryAfter,
          );
    case "context_overflow":
      return contextOverflowReply(api);
    case "unauthorized":
      return anthropic
        ? errorReply(api, 401, "authentication_error", "invalid x-api-key")
        : errorReply(api, 401, "invalid_request_error", "Incorrect API key provided.", "invalid_api_key");
    case "bad_request":
      return errorReply(api, 400, "invalid_request_error", "Invalid request: injected fault");
    default:
      return undefined;
  }
}
