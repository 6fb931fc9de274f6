/**
 * Property: whatever tool-call ids a provider returns — any printable characters, `|`, long ids,
 * the same id on several turns or twice in one answer — every tool runs (bash included, never
 * refused as "started by an earlier attempt"), and the session round-trips through export,
 * import and pi's own loader.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { UNKNOWN_OUTCOME_TEXT } from "../../../src/core/markers";
import { parseSession } from "../../../src/core/session-codec";
import { buildContext } from "../../../src/core/session-tree";
import type { ScriptedToolCall } from "../../../src/providers/local-server/types";
import { testTmpDir } from "../../support/integration-env";
import { messagesOf, runStageForSuite } from "../../support/run-harness";
import { asJson, runPiHelper } from "../../unit/core/helpers";

jest.setTimeout(300_000);

const stage = runStageForSuite();

/** Printable ids: ASCII, any Unicode without control characters, long ones, and ids seen in the wild. */
const toolCallId = fc.oneof(
  fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 24 }),
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 12 }).filter((id) => !/\p{C}/u.test(id)),
  fc.string({ unit: "grapheme-ascii", minLength: 65, maxLength: 300 }),
  fc.constantFrom("call_0", "call_0|fc_0", "a|b|c", "|", "toolu_01", "call 1"),
);

/** Calls that succeed in a workspace holding `f.txt` ("hello…"); one effectful call per turn at most. */
const effectful: Omit<ScriptedToolCall, "id">[] = [
  { name: "bash", arguments: { command: "cat f.txt" } },
  { name: "edit", arguments: { path: "f.txt", oldText: "hello", newText: "hello!" } },
  { name: "write", arguments: { path: "g.txt", content: "hello again\n" } },
];
const readOnly: Omit<ScriptedToolCall, "id">[] = [
  { name: "read", arguments: { path: "f.txt" } },
  { name: "grep", arguments: { pattern: "hello" } },
  { name: "find", arguments: { pattern: "*.txt" } },
  { name: "ls", arguments: {} },
];

const turn = fc.tuple(
  fc.constantFrom(...effectful),
  fc.option(fc.constantFrom(...readOnly), { nil: undefined }),
  toolCallId,
  toolCallId,
);

const MODELS = ["local-chat", "local-responses", "local-anthropic"];
let runs = 0;

test("any provider tool-call ids: every tool runs; export, import and pi agree", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...MODELS),
      toolCallId,
      fc.array(turn, { minLength: 1, maxLength: 3 }),
      fc.boolean(),
      async (model, firstId, turns, repeatFirst) => {
        const scenario = `ids-${++runs}`;
        const scripted = [
          { toolCalls: [{ id: firstId, name: "write", arguments: { path: "f.txt", content: "hello\n" } }] },
          ...turns.map(([call, extra, id, extraId]) => ({
            toolCalls: [
              { ...call, id: repeatFirst ? firstId : id },
              ...(extra ? [{ ...extra, id: repeatFirst ? firstId : extraId }] : []),
            ],
          })),
          { text: "done" },
        ];
        stage().llm.addScenario(scenario, { turns: scripted });
        const ref = stage().newSession();
        await stage().runs.deliver(
          ref,
          { text: `[scenario:${scenario}] go`, mode: "auto" },
          stage().settings({ model }),
        );
        expect((await stage().result(ref)).status).toBe("completed");

        const entries = await stage().entries(ref);
        const messages = messagesOf(entries);
        const results = messages.flatMap((message) => (message.role === "toolResult" ? [message] : []));
        const expectedCalls = scripted.reduce(
          (sum, t) => sum + ("toolCalls" in t ? t.toolCalls.length : 0),
          0,
        );
        expect(results).toHaveLength(expectedCalls);
        for (const result of results) {
          const text = result.content.map((block) => (block.type === "text" ? block.text : "")).join("");
          expect({ tool: result.toolName, isError: result.isError, text }).toMatchObject({ isError: false });
          expect(text).not.toContain(UNKNOWN_OUTCOME_TEXT);
          if (result.toolName === "bash") expect(text).toContain("hello");
        }
        // Stored ids are unique keys, each result answers its own call.
        const callIds = messages.flatMap((message) =>
          message.role === "assistant"
            ? message.content.flatMap((b) => (b.type === "toolCall" ? [b.id] : []))
            : [],
        );
        expect(new Set(callIds).size).toBe(callIds.length);
        expect(results.map((result) => result.toolCallId)).toEqual(callIds);

        // Export → import gives the same entries; pi's loader builds the same context.
        const exported = await stage().store.exportJsonl(ref);
        const reimported = parseSession(exported);
        expect(asJson(reimported.entries)).toEqual(asJson(entries));
        const file = join(testTmpDir(), `${scenario}.jsonl`);
        writeFileSync(file, exported);
        const pi = runPiHelper<{ context: { messages: unknown[] } }>("pi-context.mjs", [file]);
        expect(asJson(buildContext(entries).messages)).toEqual(pi.context.messages);
      },
    ),
    { numRuns: 10, seed: 20261201, endOnFailure: true },
  );
});
