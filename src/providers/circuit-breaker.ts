/**
 * Circuit breakers of model providers, one per model at a provider endpoint (its wire API, base URL
 * and model id: `breakerKeyOf`), kept in this process's memory: each worker learns on its own that
 * a provider is down (the decision and its trade-off: docs/providers.md, "Circuit breakers").
 *
 * - closed: requests go; `failures` failover-class errors in a row (`recordFailure`) open it.
 * - open: until `cooldownMs` has passed no request is admitted.
 * - half-open: after the cooldown one request (the probe) is admitted; its success closes the
 *   breaker, its failure opens it for another cooldown, an aborted probe lets the next request
 *   probe. A probe that never reports is replaced after another cooldown.
 *
 * Pure bookkeeping with an injected clock: no I/O, unit-tested on its transitions.
 */
import { BoundedCache } from "../core/bounded-cache";

export interface BreakerSettings {
  /** Failover-class errors in a row that open a model's breaker at its endpoint. */
  failures: number;
  /** How long an open breaker refuses requests before it lets one probe through. */
  cooldownMs: number;
}

export const DEFAULT_BREAKER_SETTINGS: BreakerSettings = { failures: 3, cooldownMs: 30_000 };

/** Endpoints whose state is kept at once (one-line models may name many base URLs). */
const MAX_ENDPOINTS = 512;

type BreakerState =
  | { kind: "closed"; failures: number }
  | { kind: "open"; until: number }
  | { kind: "half_open"; probeSince: number };

export type BreakerStateKind = BreakerState["kind"];

/** The outcome of an admitted request, as the breaker counts it. */
export type BreakerOutcome =
  /** The provider answered (an answer, or a refusal of the request itself: it is up). */
  | "success"
  /** Rate limit, overload, 5xx, connection failure: what failing over is for. */
  | "failure"
  /** The caller gave up (an abort): says nothing about the provider. */
  | "neutral";

/**
 * The breaker a call counts against: its endpoint and its model. Rate limits and overload are
 * commonly per model, so one model's failures must not keep a run from the next model of its list
 * on the same endpoint; a provider-wide outage then costs each model its own few failures.
 */
export function breakerKeyOf(api: string, baseURL: string | undefined, modelId: string): string {
  return `${api} ${baseURL ?? "default"} ${modelId}`;
}

const CLOSED: BreakerState = { kind: "closed", failures: 0 };

export class CircuitBreakers {
  private readonly states = new BoundedCache<string, BreakerState>({ capacity: MAX_ENDPOINTS });

  constructor(
    private readonly settings: BreakerSettings = DEFAULT_BREAKER_SETTINGS,
    private readonly now: () => number = Date.now,
  ) {}

  /** The breaker's state for `key` now (an open breaker past its cooldown reads as half-open). */
  state(key: string): BreakerStateKind {
    const state = this.states.get(key) ?? CLOSED;
    if (state.kind === "open" && this.now() >= state.until) return "half_open";
    return state.kind;
  }

  /** Whether a request to `key` may be sent now; a half-open breaker admits one probe at a time. */
  admit(key: string): boolean {
    const state = this.states.get(key) ?? CLOSED;
    const now = this.now();
    if (state.kind === "closed") return true;
    const probeDue =
      state.kind === "open" ? now >= state.until : now - state.probeSince >= this.settings.cooldownMs;
    if (!probeDue) return false;
    this.states.set(key, { kind: "half_open", probeSince: now });
    return true;
  }

  /** Counts an admitted request's outcome. */
  record(key: string, outcome: BreakerOutcome): void {
    const state = this.states.get(key) ?? CLOSED;
    if (outcome === "success") {
      if (state.kind !== "closed" || state.failures > 0) this.states.set(key, CLOSED);
      return;
    }
    if (outcome === "neutral") {
      // An abandoned probe: the next request probes.
      if (state.kind === "half_open") this.states.set(key, { kind: "open", until: this.now() });
      return;
    }
    const failures = state.kind === "closed" ? state.failures + 1 : this.settings.failures;
    this.states.set(
      key,
      failures >= this.settings.failures
        ? { kind: "open", until: this.now() + this.settings.cooldownMs }
        : { kind: "closed", failures },
    );
  }
}
