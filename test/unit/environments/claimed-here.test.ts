/**
 * The claims an API process remembers so a call's heartbeats and result skip reading its claim
 * record back: only the newest claim of a call, only for its tenant and environment, bounded.
 */
import { ClaimedHere } from "../../../src/environments/calls";
import type { RunnerToolCall } from "../../../src/environments/store";

function claimed(claimId: string, overrides: Partial<RunnerToolCall> = {}): RunnerToolCall {
  return {
    kind: "tool",
    callId: "s1.4",
    tenantId: "tenant-a",
    sessionId: "s1",
    environment: "laptop",
    attempt: 1,
    taskToken: "dG9rZW4=",
    claim: { id: claimId },
    slot: { seq: 4, id: "e4", parentId: "e3", timestamp: "2026-12-05T00:00:00.000Z" },
    toolCall: { id: "call-1", name: "ls" },
    ...overrides,
  };
}

test("a call is held by the claim that took it, and by no other claim, tenant or environment", () => {
  const here = new ClaimedHere();
  const call = claimed("first");
  here.remember(call);
  expect(here.held("tenant-a", "laptop", "s1.4", "first")).toBe(call);
  expect(here.held("tenant-a", "laptop", "s1.4", "guessed")).toBeUndefined();
  expect(here.held("tenant-b", "laptop", "s1.4", "first")).toBeUndefined();
  expect(here.held("tenant-a", "ci", "s1.4", "first")).toBeUndefined();
  expect(here.held("tenant-a", "laptop", "s1.5", "first")).toBeUndefined();
});

test("a newer claim of the same call replaces the older, and forgetting the older leaves it", () => {
  const here = new ClaimedHere();
  const older = claimed("first");
  const newer = claimed("second", { attempt: 2 });
  here.remember(older);
  here.remember(newer);
  expect(here.held("tenant-a", "laptop", "s1.4", "first")).toBeUndefined();
  here.forget(older);
  expect(here.held("tenant-a", "laptop", "s1.4", "second")).toBe(newer);
  here.forget(newer);
  expect(here.held("tenant-a", "laptop", "s1.4", "second")).toBeUndefined();
});

test("past its limit the oldest claims are forgotten first", () => {
  const here = new ClaimedHere(2);
  const calls = ["s1.1", "s1.2", "s1.3"].map((callId, index) => claimed(`claim-${index}`, { callId }));
  for (const call of calls) here.remember(call);
  expect(here.held("tenant-a", "laptop", "s1.1", "claim-0")).toBeUndefined();
  expect(here.held("tenant-a", "laptop", "s1.2", "claim-1")).toBe(calls[1]);
  expect(here.held("tenant-a", "laptop", "s1.3", "claim-2")).toBe(calls[2]);
});

test("a claim whose heartbeats keep reaching this process outlives newer, quiet ones", () => {
  const here = new ClaimedHere(2);
  const calls = ["s1.1", "s1.2", "s1.3"].map((callId, index) => claimed(`claim-${index}`, { callId }));
  here.remember(calls[0]!);
  here.remember(calls[1]!);
  expect(here.held("tenant-a", "laptop", "s1.1", "claim-0")).toBe(calls[0]);
  here.remember(calls[2]!);
  expect(here.held("tenant-a", "laptop", "s1.1", "claim-0")).toBe(calls[0]);
  expect(here.held("tenant-a", "laptop", "s1.2", "claim-1")).toBeUndefined();
});

test("a call with an approved edit is not kept (its arguments can be large): its record is read", () => {
  const here = new ClaimedHere();
  here.remember(claimed("edited", { argumentsOverride: { path: "a.txt", content: "x".repeat(1_000) } }));
  expect(here.held("tenant-a", "laptop", "s1.4", "edited")).toBeUndefined();
});
