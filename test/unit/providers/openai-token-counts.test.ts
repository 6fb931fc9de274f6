/** How both OpenAI APIs' usage becomes Keel's token counts (src/providers/openai-client.ts). */
import { openAiTokenCounts } from "../../../src/providers/openai-client";

describe("openAiTokenCounts", () => {
  it("takes the cached tokens out of the input count: they are counted, and priced, apart", () => {
    expect(openAiTokenCounts(1200, 345, 800)).toEqual({
      input: 400,
      output: 345,
      cacheRead: 800,
      cacheWrite: 0,
    });
  });

  it("counts no cached tokens when a server leaves them out or sends null", () => {
    for (const cached of [undefined, null]) {
      expect(openAiTokenCounts(1200, 345, cached)).toEqual({
        input: 1200,
        output: 345,
        cacheRead: 0,
        cacheWrite: 0,
      });
    }
  });
});
