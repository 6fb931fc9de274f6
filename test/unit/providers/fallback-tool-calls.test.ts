import { parseTextToolCalls } from "../../../src/providers/fallback-tool-calls";

const OFFERED = ["read", "bash", "edit", "mcp.search"];

function idGenerator() {
  let next = 0;
  return () => `fallback_${++next}`;
}

const parse = (text: string) =>
  parseTextToolCalls(text, OFFERED, idGenerator()).map((call) => [call.id, call.name, call.arguments]);

describe("parseTextToolCalls", () => {
  test.each([
    [
      "Hermes-style tag",
      'I will read the file.\n<tool_call>\n{"name": "read", "arguments": {"path": "src/index.ts"}}\n</tool_call>',
      [["fallback_1", "read", { path: "src/index.ts" }]],
    ],
    [
      "two tags in one reply",
      '<tool_call>{"name":"read","arguments":{"path":"a"}}</tool_call>\n<tool_call>{"name":"bash","arguments":{"command":"ls"}}</tool_call>',
      [
        ["fallback_1", "read", { path: "a" }],
        ["fallback_2", "bash", { command: "ls" }],
      ],
    ],
    [
      "arguments as a JSON string",
      '<tool_call>{"name": "bash", "arguments": "{\\"command\\": \\"npm test\\"}"}</tool_call>',
      [["fallback_1", "bash", { command: "npm test" }]],
    ],
    [
      "Llama <function=name> with JSON",
      '<function=bash>{"command": "git status"}</function>',
      [["fallback_1", "bash", { command: "git status" }]],
    ],
    [
      "Qwen-coder <function=name> with parameters",
      "<function=edit>\n<parameter=path>\nsrc/a.ts\n</parameter>\n<parameter=oldText>\nconst a = 1;\n</parameter>\n<parameter=newText>\nconst a = 2;\n</parameter>\n</function>",
      [["fallback_1", "edit", { path: "src/a.ts", oldText: "const a = 1;", newText: "const a = 2;" }]],
    ],
    [
      "json code fence with {name, arguments}",
      'Let me check.\n```json\n{"name": "read", "arguments": {"path": "package.json", "limit": 20}}\n```',
      [["fallback_1", "read", { path: "package.json", limit: 20 }]],
    ],
    [
      "fence with an array of calls",
      '```json\n[{"name": "read", "arguments": {"path": "a"}}, {"tool": "bash", "args": {"command": "pwd"}}]\n```',
      [
        ["fallback_1", "read", { path: "a" }],
        ["fallback_2", "bash", { command: "pwd" }],
      ],
    ],
    [
      "bare {tool, args}",
      '{"tool": "bash", "args": {"command": "ls -la"}}',
      [["fallback_1", "bash", { command: "ls -la" }]],
    ],
    [
      "OpenAI-shaped {function: {name, arguments}}",
      '{"type": "function", "function": {"name": "read", "arguments": "{\\"path\\": \\"x\\"}"}}',
      [["fallback_1", "read", { path: "x" }]],
    ],
    [
      "dotted name that is offered",
      '{"name": "mcp.search", "parameters": {"q": "keel"}}',
      [["fallback_1", "mcp.search", { q: "keel" }]],
    ],
  ])("parses: %s", (_label, text, expected) => {
    expect(parse(text)).toEqual(expected);
  });

  test.each([
    ["plain prose", "The build passed. Nothing else to do."],
    ["prose mentioning a tag without JSON", "You can call tools with <tool_call> blocks."],
    ["a name that is not offered", '<tool_call>{"name": "delete_everything", "arguments": {}}</tool_call>'],
    ["a name with a path in it", '{"name": "../../bin/sh", "arguments": {"c": "x"}}'],
    ["a name with spaces", '```json\n{"name": "read file", "arguments": {"path": "a"}}\n```'],
    ["a name starting with a digit", '{"name": "1read", "arguments": {}}'],
    ["a data object without arguments", '```json\n{"name": "keel", "version": "0.1.0"}\n```'],
    ["arguments that are not an object", '{"name": "bash", "arguments": ["ls"]}'],
    [
      "JSON embedded in prose (not a whole reply)",
      'Example: {"name": "bash", "arguments": {"command": "ls"}} is how it looks.',
    ],
    ["broken JSON in a tag", '<tool_call>{"name": "read", "arguments": {"path": </tool_call>'],
    ["a mixed array (data, not a batch)", '[{"name": "read", "arguments": {"path": "a"}}, {"id": 3}]'],
    ["a typescript fence", '```ts\nconst call = {"name": "read", "arguments": {}};\n```'],
  ])("does not parse: %s", (_label, text) => {
    expect(parse(text)).toEqual([]);
  });

  test("only offered names survive when a reply mixes good and bad calls", () => {
    const text =
      '<tool_call>{"name": "rm", "arguments": {"path": "/"}}</tool_call><tool_call>{"name": "read", "arguments": {"path": "a"}}</tool_call>';
    expect(parse(text)).toEqual([["fallback_1", "read", { path: "a" }]]);
  });
});
