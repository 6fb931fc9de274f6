/**
 * A failed event stream tells its client what failed as a response would, never the error's own
 * text: an internal address, a bucket or a host in it stays in the API's log.
 */

import { streamFailureMessage } from "../../../src/api/unavailable";
import { RunNotAnsweringError } from "../../../src/run-client/session-runs";

test("an internal error's text never reaches the client", () => {
  const internal = new Error(
    "connect to s3://keel-prod-7f3a at 10.0.4.17:9000 failed: AccessDenied for role worker-secret-role",
  );
  const message = streamFailureMessage(internal);
  expect(message).toBe("the API could not read the run's events (an internal error, logged by the API)");
  for (const detail of ["10.0.4.17", "keel-prod-7f3a", "worker-secret-role"])
    expect(message).not.toContain(detail);
});

test("an unreachable dependency is named as the API's 503 names it, without its address", () => {
  const refused = Object.assign(new Error("connect ECONNREFUSED 10.0.4.17:9000"), { code: "ECONNREFUSED" });
  expect(streamFailureMessage(refused)).toBe("the API could not read the run's events: storage unavailable");
});

test("a run that does not answer says why", () => {
  const error = new RunNotAnsweringError(
    "run-1",
    { cause: new Error("deadline") },
    "no worker polls its task queue",
  );
  expect(streamFailureMessage(error)).toBe("the run cannot be read now: no worker polls its task queue");
});
