/**
 * `git` workspace sources: which URLs may be cloned and how the clone runs.
 *
 * A remote source must be an `https://` URL on a host the operator allows (KEEL_GIT_HOSTS);
 * `*` there admits any host whose addresses are all public (net/egress-policy.ts), and the clone
 * is then pinned to the addresses that were checked (`http.curloptResolve`), so the name cannot
 * resolve elsewhere when git connects. An absolute local path or `file://` URL reads the worker's
 * disk; whether callers may name one is the API's directory-workspace setting.
 *
 * git runs with a scrubbed environment: only PATH and the variables below, HOME an empty
 * temporary folder (no user config, credentials or SSH keys), no system config, no terminal
 * prompts, no credential helpers, no hooks, no redirects, and only the https (or, for a local
 * source, file) transport.
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { EgressRefusedError, normalizeHost, resolveAllowed } from "../net/egress-policy";

/** The setting that lists the hosts remote git sources may name. */
export const GIT_HOSTS_SETTING = "KEEL_GIT_HOSTS";
/** Hosts remote git sources may name when KEEL_GIT_HOSTS is unset. */
const DEFAULT_GIT_HOSTS = "github.com,gitlab.com,bitbucket.org,codeberg.org";
const GIT_CLONE_TIMEOUT_MS = 5 * 60_000;

/** The hosts remote git sources may name. */
export interface GitHosts {
  /** `*`: any host whose addresses are all public. */
  anyPublic: boolean;
  /** Lowercase `host` or `host:port` entries; these may resolve to any address. */
  listed: ReadonlySet<string>;
}

const HOST_ENTRY = /^(\*|[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:\d{1,5})?|\[[0-9a-f:.]+\](:\d{1,5})?)$/;

/** Parses KEEL_GIT_HOSTS (comma-separated `host`, `host:port` or `*`); unset: DEFAULT_GIT_HOSTS. */
export function parseGitHosts(text: string | undefined): GitHosts {
  const entries = (text ?? DEFAULT_GIT_HOSTS)
    .split(",")
    .map((entry) => entry.trim().toLowerCase())
    .filter(Boolean);
  for (const entry of entries) {
    if (!HOST_ENTRY.test(entry))
      throw new Error(`${GIT_HOSTS_SETTING}: ${JSON.stringify(entry)} is not a host name, host:port or *`);
  }
  return { anyPublic: entries.includes("*"), listed: new Set(entries.filter((entry) => entry !== "*")) };
}

/** A git source URL that reads the worker's disk: an absolute path or a `file://` URL. */
export const isLocalGitSource = (url: string): boolean => url.startsWith("/") || url.startsWith("file://");

/** Whether `host` of `url` is listed (by name, or by name and port). */
function listedHost(hosts: GitHosts, url: URL): boolean {
  const host = normalizeHost(url.hostname);
  return hosts.listed.has(host) || hosts.listed.has(`${host}:${url.port || "443"}`);
}

/**
 * Why a remote git URL may not be cloned, or undefined when it may (by its form and host; the
 * addresses of a `*`-admitted host are checked when cloning). The message names the setting.
 */
export function gitUrlRefusal(url: string, hosts: GitHosts): string | undefined {
  if (!URL.canParse(url) || new URL(url).protocol !== "https:")
    return "remote git sources must be https:// URLs (ssh, git://, http:// and transport helpers are refused)";
  const parsed = new URL(url);
  if (parsed.username || parsed.password) return "the URL must not carry credentials";
  if (hosts.anyPublic || listedHost(hosts, parsed)) return undefined;
  return `${parsed.host} is not a git host this deployment clones from (the operator lists them in ${GIT_HOSTS_SETTING})`;
}

/** A git source the policy refuses (the same source is refused on every attempt). */
export class GitSourceRefusedError extends Error {
  constructor(reason: string) {
    super(`Workspace source refused: ${reason}`);
    this.name = "GitSourceRefusedError";
  }
}

/** What `git clone` is run with. */
interface GitInvocation {
  args: string[];
  env: NodeJS.ProcessEnv;
}

/** Settings that leave git nothing to pick up from the worker: no config, credentials, hooks or prompts. */
const LOCKED_DOWN_CONFIG = [
  "credential.helper=",
  "core.hooksPath=/dev/null",
  "core.fsmonitor=false",
  "core.askPass=",
  "http.followRedirects=false",
  "protocol.allow=never",
  "protocol.https.allow=always",
];

/**
 * The arguments and environment of the clone: `home` is an empty folder used as HOME and as
 * the template folder; `resolve` pins host:port to checked addresses (curl's `--resolve` form).
 */
function gitCloneInvocation(
  source: { url: string; ref?: string },
  target: string,
  home: string,
  options: { local: boolean; resolve?: string },
): GitInvocation {
  const config = [
    ...LOCKED_DOWN_CONFIG,
    ...(options.local ? ["protocol.file.allow=always"] : []),
    ...(options.resolve ? [`http.curloptResolve=${options.resolve}`] : []),
  ];
  const refArgs = source.ref ? ["--branch", source.ref] : [];
  return {
    args: [
      ...config.flatMap((setting) => ["-c", setting]),
      "clone",
      "--quiet",
      "--no-recurse-submodules",
      `--template=${home}`,
      ...refArgs,
      "--",
      source.url,
      target,
    ],
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      XDG_CONFIG_HOME: home,
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_TERMINAL_PROMPT: "0",
      GIT_ASKPASS: "/bin/false",
      GIT_ATTR_NOSYSTEM: "1",
      LC_ALL: "C",
    },
  };
}

/**
 * Clones `source` into `target` (which must not exist). Throws GitSourceRefusedError before
 * running git when the URL is refused (`gitUrlRefusal`) or a `*`-admitted host resolves to a
 * non-public address.
 */
export async function cloneGitSource(
  source: { url: string; ref?: string },
  target: string,
  options: { hosts: GitHosts; signal?: AbortSignal },
): Promise<void> {
  if (source.url.startsWith("-") || source.ref?.startsWith("-")) {
    throw new Error("Workspace source: git url and ref must not start with '-'");
  }
  const local = isLocalGitSource(source.url);
  let url = source.url;
  let resolve: string | undefined;
  if (!local) {
    const refusal = gitUrlRefusal(source.url, options.hosts);
    if (refusal) throw new GitSourceRefusedError(refusal);
    const parsed = new URL(source.url);
    // git sees the URL as it was checked (the WHATWG form: 0x7f.1 is written 127.0.0.1).
    url = parsed.href;
    if (!listedHost(options.hosts, parsed)) {
      const addresses = await resolveAllowed(parsed.hostname, () => false).catch((error: unknown) => {
        throw error instanceof EgressRefusedError ? new GitSourceRefusedError(error.message) : error;
      });
      const port = parsed.port || "443";
      const host = normalizeHost(parsed.hostname);
      resolve = `${host}:${port}:${addresses.map((address) => (address.includes(":") ? `[${address}]` : address)).join(",")}`;
    }
  }
  const home = await fs.mkdtemp(path.join(tmpdir(), "keel-git-home-"));
  try {
    const { args, env } = gitCloneInvocation({ ...source, url }, target, home, { local, resolve });
    await runGit(args, env, options.signal);
  } finally {
    await fs.rm(home, { recursive: true, force: true });
  }
}

function runGit(args: string[], env: NodeJS.ProcessEnv, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      "git",
      args,
      { signal, timeout: GIT_CLONE_TIMEOUT_MS, killSignal: "SIGKILL", env },
      (error, _stdout, stderr) => {
        if (error) reject(new Error(`git clone failed: ${String(stderr).trim() || error.message}`));
        else resolve();
      },
    );
  });
}
