import { problemDocument } from "../../../src/api/problems";

test("problem documents carry a stable type URI, the title and the status", () => {
  expect(problemDocument("queue-full", "wait")).toEqual({
    type: "https://keel.dev/problems/queue-full",
    title: "The session's message queue is full",
    status: 429,
    detail: "wait",
  });
});
