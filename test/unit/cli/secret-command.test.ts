/**
 * `keel secret set` reads the value from standard input only: a terminal there is refused without
 * `--prompt` (a forgotten pipe never waits in silence), and a value on the command line is a usage
 * error; neither message quotes what was typed.
 */
import { UsageError } from "../../../src/api-client/client";
import { type SecretInput, secretCommandWith } from "../../../src/cli/commands/secret";

const context = {
  env: { KEEL_API_URL: "http://127.0.0.1:9", KEEL_API_KEY: "k" },
  out: { write: () => undefined } as never,
  err: () => undefined,
};

function terminal(): SecretInput {
  return {
    isTTY: true,
    setRawMode: () => undefined,
    async *[Symbol.asyncIterator]() {
      yield Buffer.from("typed-value\r");
    },
  };
}

test("a terminal on standard input is refused without --prompt", async () => {
  const command = secretCommandWith(terminal);
  await expect(command.run(["set", "GITHUB_TOKEN", "--host", "github.com"], context)).rejects.toThrow(
    /read from standard input: pipe it .* or pass --prompt/,
  );
});

test("a value among the arguments, a bad name or no host is a usage error that does not quote the value", async () => {
  const command = secretCommandWith(terminal);
  const value = "ghp_not_here_please";
  const error = await command
    .run(["set", "GITHUB_TOKEN", value, "--host", "github.com"], context)
    .catch((e) => e);
  expect(error).toBeInstanceOf(UsageError);
  expect(String(error.message)).not.toContain(value);
  await expect(command.run(["set", "lower", "--host", "github.com"], context)).rejects.toThrow(/upper-case/);
  await expect(command.run(["set", "GITHUB_TOKEN"], context)).rejects.toThrow(/--host/);
  await expect(
    command.run(["set", "GITHUB_TOKEN", "--host", "github.com", "--in", "body"], context),
  ).rejects.toThrow(/--in must be header or basic-auth/);
});

test("--prompt reads the typed line with echo off, then sends it", async () => {
  const modes: boolean[] = [];
  const input: SecretInput = {
    isTTY: true,
    setRawMode: (mode: boolean) => modes.push(mode),
    async *[Symbol.asyncIterator]() {
      yield "abx\u007fc\r";
    },
  };
  const sent: unknown[] = [];
  const realFetch = global.fetch;
  global.fetch = (async (_url: unknown, init: { body?: string }) => {
    sent.push(JSON.parse(init.body ?? "{}"));
    return new Response(
      JSON.stringify({
        name: "T",
        hosts: ["github.com"],
        in: ["header"],
        createdAt: "x",
        updatedAt: "x",
        version: 1,
      }),
      { status: 201, headers: { "content-type": "application/json" } },
    );
  }) as typeof fetch;
  try {
    await secretCommandWith(() => input).run(["set", "T", "--host", "github.com", "--prompt"], context);
  } finally {
    global.fetch = realFetch;
  }
  expect(modes).toEqual([true, false]);
  expect(sent).toEqual([{ value: "abc", hosts: ["github.com"] }]);
});
