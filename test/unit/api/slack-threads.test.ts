import { slackSessionId } from "../../../src/api/slack/threads";

test("a thread's session id is deterministic, distinct per thread and a valid session id", () => {
  const thread = { teamId: "T1", channel: "C1", threadTs: "1700000000.000100" };
  expect(slackSessionId(thread)).toBe(slackSessionId({ ...thread }));
  expect(slackSessionId(thread)).not.toBe(slackSessionId({ ...thread, threadTs: "1700000000.000200" }));
  expect(slackSessionId(thread)).toMatch(/^slack-[0-9a-f]{32}$/);
});
