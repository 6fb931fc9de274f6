/**
 * git workspace sources: only https URLs on allowed hosts are cloned, names resolving to internal
 * addresses are refused, and git runs without the worker's secrets. A stand-in `git` first on
 * PATH records the environment and arguments it gets (and whether it ran at all).
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { parseGitHosts } from "../../../src/tools/git-source";
import { prepareWorkspace, workspaceFor } from "../../../src/tools/workspace";

let base: string;
let record: string;
let realPath: string | undefined;
let count = 0;
const SECRETS = {
  OPENAI_API_KEY: "sk-openai-secret",
  ANTHROPIC_API_KEY: "sk-ant-secret",
  AWS_ACCESS_KEY_ID: "AKIASECRET",
  AWS_SECRET_ACCESS_KEY: "aws-secret",
  AWS_CONTAINER_CREDENTIALS_RELATIVE_URI: "/v2/credentials/secret",
  KEEL_TEMPORAL_API_KEY: "temporal-secret",
  TEMPORAL_API_KEY: "temporal-secret-2",
  SSH_AUTH_SOCK: "/tmp/ssh-agent.sock",
  GIT_SSH_COMMAND: "ssh -i /secret/id_rsa",
  GIT_CONFIG_GLOBAL: "/secret/gitconfig",
};

beforeAll(async () => {
  base = await fs.realpath(await fs.mkdtemp(path.join(tmpdir(), "keel-git-source-")));
  record = path.join(base, "record");
  const bin = path.join(base, "bin");
  await fs.mkdir(bin);
  // Records what it was given, then fails like a refused clone.
  await fs.writeFile(
    path.join(bin, "git"),
    `#!/bin/sh\nmkdir -p ${record}\nenv > ${record}/env\nls -A "$HOME" > ${record}/home\nprintf '%s\\n' "$@" > ${record}/args\nexit 1\n`,
    { mode: 0o755 },
  );
  realPath = process.env.PATH;
  process.env.PATH = `${bin}:${realPath}`;
  Object.assign(process.env, SECRETS);
});

afterAll(async () => {
  process.env.PATH = realPath;
  for (const name of Object.keys(SECRETS)) delete process.env[name];
  await fs.rm(base, { recursive: true, force: true });
});

beforeEach(() => fs.rm(record, { recursive: true, force: true }));

const workspace = () => workspaceFor(path.join(base, "root"), "tenant", `s${++count}`);
const gitRan = () =>
  fs.stat(record).then(
    () => true,
    () => false,
  );

describe("refused before git runs", () => {
  it.each([
    "http://github.com/keel/repo.git",
    "ssh://git@github.com/keel/repo.git",
    "git://github.com/keel/repo.git",
    "git@github.com:keel/repo.git",
    "ext::sh -c touch% /tmp/keel-pwned",
    "fd::17",
    "https://evil.example/repo.git",
    "https://token:x-oauth@github.com/keel/repo.git",
    "github.com/keel/repo.git",
  ])("%s", async (url) => {
    await expect(prepareWorkspace(workspace(), { type: "git", url })).rejects.toThrow(/refused/);
    expect(await gitRan()).toBe(false);
  });

  // '*' admits any host whose addresses are all public: names and spellings of internal ones are not.
  it.each([
    "https://localhost/repo.git",
    "https://127.0.0.1/repo.git",
    "https://0x7f.1/repo.git",
    "https://2130706433/repo.git",
    "https://[::1]/repo.git",
    "https://[::ffff:169.254.169.254]/latest/meta-data",
    "https://169.254.170.2/v2/credentials",
    "https://10.0.0.1/repo.git",
  ])("%s with KEEL_GIT_HOSTS=*", async (url) => {
    const gitHosts = parseGitHosts("*");
    await expect(prepareWorkspace(workspace(), { type: "git", url }, { gitHosts })).rejects.toThrow(
      /refused.*(loopback|link-local|private)/,
    );
    expect(await gitRan()).toBe(false);
  });
});

it("a listed host may be internal (the operator named it); git then runs", async () => {
  const gitHosts = parseGitHosts("localhost:8443");
  await expect(
    prepareWorkspace(workspace(), { type: "git", url: "https://localhost:8443/repo.git" }, { gitHosts }),
  ).rejects.toThrow(/git clone failed/);
  expect(await gitRan()).toBe(true);
  const args = (await fs.readFile(path.join(record, "args"), "utf8")).split("\n");
  expect(args).toEqual(
    expect.arrayContaining(["protocol.allow=never", "protocol.https.allow=always", "credential.helper="]),
  );
  expect(args).not.toContain("protocol.file.allow=always");
});

it("git runs with a scrubbed environment: no keys, no agent, an empty HOME, no system config or prompts", async () => {
  const bare = path.join(base, "origin.git");
  execFileSync("git", ["init", "--quiet", "--bare", bare], { env: { ...process.env, PATH: realPath } });
  await expect(prepareWorkspace(workspace(), { type: "git", url: bare })).rejects.toThrow(/git clone failed/);
  const env = await fs.readFile(path.join(record, "env"), "utf8");
  for (const [name, value] of Object.entries(SECRETS)) {
    expect(env).not.toContain(value);
    if (name !== "GIT_CONFIG_GLOBAL") expect(env).not.toMatch(new RegExp(`^${name}=`, "m"));
  }
  expect(env).not.toMatch(/^(KEEL_|AWS_|TEMPORAL|OPENAI|ANTHROPIC|SSH_)/m);
  expect(env).toMatch(/^GIT_CONFIG_NOSYSTEM=1$/m);
  expect(env).toMatch(/^GIT_TERMINAL_PROMPT=0$/m);
  expect(env).toMatch(/^GIT_CONFIG_GLOBAL=\/dev\/null$/m);
  const home = /^HOME=(.*)$/m.exec(env)?.[1];
  expect(home).not.toBe(process.env.HOME);
  expect(await fs.readFile(path.join(record, "home"), "utf8")).toBe("");
  // The temporary HOME is gone after the clone.
  await expect(fs.stat(home ?? "")).rejects.toThrow();
  const args = (await fs.readFile(path.join(record, "args"), "utf8")).split("\n");
  expect(args).toEqual(
    expect.arrayContaining([
      "protocol.allow=never",
      "protocol.file.allow=always",
      "core.hooksPath=/dev/null",
      "http.followRedirects=false",
    ]),
  );
});

describe("KEEL_GIT_HOSTS", () => {
  it("defaults to the public forges; '*' and host:port entries parse; junk is refused", () => {
    expect([...parseGitHosts(undefined).listed]).toContain("github.com");
    expect(parseGitHosts("*, git.corp.example:8443")).toEqual({
      anyPublic: true,
      listed: new Set(["git.corp.example:8443"]),
    });
    expect(parseGitHosts("").listed.size).toBe(0);
    expect(() => parseGitHosts("https://github.com")).toThrow(/KEEL_GIT_HOSTS/);
  });
});
