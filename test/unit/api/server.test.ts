import { isTemporalClientError } from "../../../src/api/server";

test("the safety net keeps serving only for errors of the Temporal client's own machinery", () => {
  expect(isTemporalClientError(new Error("Channel has been shut down"))).toBe(true);
  const fromRetryTimer = new Error("14 UNAVAILABLE");
  fromRetryTimer.stack = `Error: 14 UNAVAILABLE\n    at Timeout._onTimeout (/app/node_modules/@grpc/grpc-js/build/src/client.js:1:1)`;
  expect(isTemporalClientError(fromRetryTimer)).toBe(true);
  expect(isTemporalClientError(new TypeError("cannot read properties of undefined"))).toBe(false);
  expect(isTemporalClientError("Channel has been shut down")).toBe(false);
});
