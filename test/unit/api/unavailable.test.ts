import { TemporalConnectError } from "../../../src/api/temporal";
import { unavailableDependency } from "../../../src/api/unavailable";
import { RunNotAnsweringError } from "../../../src/run-client/session-runs";

test("unreachable dependencies are named; request errors are not", () => {
  const s3Answer = (status: number, name: string) =>
    Object.assign(new Error(name), { name, $metadata: { httpStatusCode: status } });
  expect(
    unavailableDependency(new TemporalConnectError("127.0.0.1:1", { cause: new Error("deadline") })),
  ).toBe("temporal");
  expect(unavailableDependency({ code: 4 })).toBe("temporal");
  expect(unavailableDependency(s3Answer(503, "SlowDown"))).toBe("storage");
  expect(unavailableDependency(s3Answer(500, "InternalError"))).toBe("storage");
  expect(
    unavailableDependency(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })),
  ).toBe("storage");
  expect(unavailableDependency(s3Answer(412, "PreconditionFailed"))).toBeUndefined();
  expect(unavailableDependency(s3Answer(403, "AccessDenied"))).toBeUndefined();
  expect(unavailableDependency(new TypeError("bug"))).toBeUndefined();
});

test("an open run that does not answer says why; it is not Temporal being unreachable", () => {
  const error = new RunNotAnsweringError(
    "run-1",
    { cause: new Error("query timed out") },
    "no worker is polling",
  );
  expect(error.message).toBe("run run-1 is not answering right now: no worker is polling");
  expect(unavailableDependency(error)).toBeUndefined();
  expect(unavailableDependency(new Error("something else"))).toBeUndefined();
});
