// Over 400 lines: the bwrap command line, its mounts and its limits are one security boundary, kept readable in one place.
/**
 * The sandbox every process a tool starts runs in: Linux namespaces through bubblewrap (`bwrap`),
 * driven directly (docs/tools.md, "Sandbox", says why not @anthropic-ai/sandbox-runtime).
 *
 * Inside, the session's workspace is the only writable tree and appears at SANDBOX_WORKSPACE_PATH;
 * /usr and /etc are read-only (secret files of /etc masked); /tmp is a private, size-capped tmpfs;
 * /proc belongs to a new PID namespace (no worker process, no /proc/<pid>/environ of the worker);
 * the network namespace is empty unless the run asks for `network: "full"` and the worker allows it
 * for the run's tenant (KEEL_SANDBOX_NETWORK_FULL, network-access.ts); no capabilities, no
 * further user namespaces; a seccomp filter (seccomp.ts) denies the kernel interfaces a command has
 * no use for. Per-call limits (memory, processes, CPU time, file size, core dumps) are rlimits set
 * before the command runs, and per-call cgroups where available; the caller enforces wall time and
 * output size.
 *
 * bwrap reads its arguments (mounts, environment) and the seccomp program from file descriptors,
 * not from its argv: the sandbox's PID 1 is a copy of bwrap, and its /proc/1/cmdline
 * is readable inside. So the command sees neither the host path of its workspace nor its
 * environment's values there, only `bwrap --args 3 -- bash -c <its own script>`.
 *
 * `isolation: "off"` (KEEL_SANDBOX=off) runs commands directly on the worker, as before: only for
 * hosts that cannot create user namespaces (AWS Lambda, Fargate), and marked wherever it applies.
 */
import { spawnSync } from "node:child_process";
import {
  closeSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  openSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import type { ResolvedSecret } from "../vault/types";
import type { CallCgroup } from "./cgroup";
import { type CallEgressOptions, EGRESS_INSIDE, type SandboxEgress, SYSTEM_CA_BUNDLE } from "./egress-proxy";
import { commandEnvironment } from "./environment";
import { FULL_NETWORK_REFUSAL, type FullNetworkAccess, fullNetworkAllowed } from "./network-access";
import { seccompProgram } from "./seccomp";

/** Where the workspace appears inside the sandbox, and the root of every path the model sees. */
export const SANDBOX_WORKSPACE_PATH = "/workspace";
/** The private home and temporary directory of a sandboxed command (gone after the call). */
const SANDBOX_TMP = "/tmp";
/** Uid/gid of the command inside the sandbox (mapped to the worker's own user outside). */
const SANDBOX_UID = 1000;
/** bwrap's file descriptors for its NUL-separated arguments and its seccomp program. */
const ARGS_FD = 3;
const SECCOMP_FD = 4;

/** A run's network access for the processes its tools start. */
export type NetworkPolicy = "none" | "full" | { allow: string[] };

/** How tool processes are isolated on this worker. */
export type Isolation = "bwrap" | "off";

export interface ProcessLimits {
  /** Address space per process (RLIMIT_AS). */
  memoryBytes: number;
  /** Processes and threads of the sandbox user (RLIMIT_NPROC; counted per sandbox). */
  processes: number;
  /**
   * CPU time of one call: RLIMIT_CPU of each process, and the sum over the call's processes
   * where a per-call cpuacct cgroup is available.
   */
  cpuSeconds: number;
  /** Largest file a command may write (RLIMIT_FSIZE). */
  fileSizeBytes: number;
  /** Wall time of one call; a smaller `timeout` argument wins. */
  wallTimeMs: number;
  /** Size of the private /tmp (tmpfs, memory-backed). */
  tmpBytes: number;
  /**
   * Bytes of files the workspace may hold (KEEL_WORKSPACE_MAX_MB; absent: the default 2 GiB),
   * enforced by the tools (workspace-quota.ts): a bash call's RLIMIT_FSIZE is at most what is left.
   */
  workspaceBytes?: number;
}

export const DEFAULT_PROCESS_LIMITS: ProcessLimits = {
  memoryBytes: 2 * 1024 ** 3,
  processes: 256,
  cpuSeconds: 1800,
  fileSizeBytes: 1024 ** 3,
  wallTimeMs: 30 * 60_000,
  tmpBytes: 512 * 1024 ** 2,
  workspaceBytes: 2 * 1024 ** 3,
};

/** A worker's sandbox configuration (KEEL_SANDBOX*, validated at start). */
export interface SandboxConfig {
  isolation: Isolation;
  limits: ProcessLimits;
  /** Names of worker environment variables passed to commands (none by default). */
  passEnv: string[];
  /**
   * The host process's environment, given by its entry point: where an unsandboxed command's
   * PATH, HOME and locale come from, and the values of `passEnv`. Nothing else of it is used.
   */
  hostEnv: NodeJS.ProcessEnv;
  /** Who may use network "full" (KEEL_SANDBOX_NETWORK_FULL; default nobody). */
  fullNetwork: FullNetworkAccess;
}

/** The sandbox of one tool call: the worker's configuration plus the run's network choice. */
export interface SandboxPolicy extends SandboxConfig {
  network: NetworkPolicy;
  /** The tenant the call runs for (checked against `fullNetwork`). */
  tenantId?: string;
  /** Host folders bound read-only at the same path (where an MCP server's program lives). */
  readOnlyPaths?: string[];
  /** Environment beyond the allowlist (an MCP server's own, secrets resolved on the worker). */
  extraEnv?: Record<string, string>;
  /**
   * The tenant secrets the call's run names, resolved for this call (docs/tools.md, "Secrets"):
   * the sandbox sees placeholders, the egress proxy injects the values toward their hosts. Any
   * makes the call go through the proxy; with network "full" the call is refused.
   */
  secrets?: readonly ResolvedSecret[];
  /** Names the run gives that the tenant does not have (now): placeholders standing for nothing. */
  missingSecrets?: readonly string[];
  /** How the call's egress proxy resolves names and which upstream CAs it trusts (tests; a private CA). */
  egressOptions?: CallEgressOptions;
}

/** Whether the call names tenant secrets (resolved or missing). */
function namesSecrets(policy: SandboxPolicy): boolean {
  return (policy.secrets?.length ?? 0) > 0 || (policy.missingSecrets?.length ?? 0) > 0;
}

/**
 * The hosts the call may reach through its egress proxy (its run's list and every host its secrets
 * are bound to), or undefined when it has no proxy (network "none" or "full" without secrets).
 */
export function egressAllowlist(policy: SandboxPolicy): string[] | undefined {
  const own = typeof policy.network === "object" ? policy.network.allow : undefined;
  if (!namesSecrets(policy) || policy.network === "full") return own;
  return [...(own ?? []), ...(policy.secrets ?? []).flatMap((secret) => secret.hosts)];
}

export const DEFAULT_SANDBOX_POLICY: SandboxPolicy = {
  isolation: "bwrap",
  limits: DEFAULT_PROCESS_LIMITS,
  passEnv: [],
  hostEnv: {},
  fullNetwork: "off",
  network: "none",
};

/** How to start a command: executable, arguments, environment and working directory. */
export interface CommandLine {
  file: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Contents of file descriptors 3, 4, … of the started process: each a pipe, written and closed at start. */
  inputs?: Buffer[];
}

/** A sandbox that cannot give what the call asks for: the call is refused, nothing runs. */
export class SandboxUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SandboxUnavailableError";
  }
}

/**
 * The shell prelude that applies the per-call limits. `ulimit` without -S/-H sets both soft and
 * hard limits, and the sandboxed user has no capability to raise a hard limit again. CPU time has
 * a hard limit one second above the soft one: the kernel sends SIGKILL at the hard limit before
 * SIGXCPU at an equal soft one, and only SIGXCPU says which limit ended the process. The file
 * size may be 0 (a workspace at its quota): nothing can be written then, but files can be deleted.
 */
function limitsPrelude(limits: ProcessLimits): string {
  const kib = (bytes: number) => Math.max(1, Math.floor(bytes / 1024));
  const fileKib = Math.max(0, Math.floor(limits.fileSizeBytes / 1024));
  return (
    `ulimit -c 0 -v ${kib(limits.memoryBytes)} -u ${limits.processes} -f ${fileKib}` +
    ` && ulimit -S -t ${limits.cpuSeconds} && ulimit -H -t ${limits.cpuSeconds + 1} || exit 125\n`
  );
}

/** Files under /etc that hold secrets of the host; hidden inside the sandbox. */
const MASKED_ETC = [
  "/etc/shadow",
  "/etc/shadow-",
  "/etc/gshadow",
  "/etc/gshadow-",
  "/etc/sudoers",
  "/etc/sudoers.d",
  "/etc/ssh",
  "/etc/ssl/private",
  "/etc/security/opasswd",
];

/** Top-level system paths made visible read-only (as links where the host has links: merged /usr). */
const SYSTEM_PATHS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"];

function systemMounts(): string[] {
  const args: string[] = [];
  for (const target of SYSTEM_PATHS) {
    let stats: ReturnType<typeof lstatSync>;
    try {
      stats = lstatSync(target);
    } catch {
      continue;
    }
    if (stats.isSymbolicLink()) args.push("--symlink", readlinkSync(target), target);
    else if (stats.isDirectory()) args.push("--ro-bind", target, target);
  }
  for (const secret of MASKED_ETC) {
    let stats: ReturnType<typeof lstatSync>;
    try {
      stats = lstatSync(secret);
    } catch {
      continue;
    }
    if (stats.isDirectory()) args.push("--tmpfs", secret, "--remount-ro", secret);
    else args.push("--ro-bind", "/dev/null", secret);
  }
  return args;
}

/**
 * bwrap arguments isolating a command in `workspaceDir` (a real path) under `policy`, with the
 * seccomp program expected on SECCOMP_FD. They hold host paths and environment values: bwrap must
 * read them from a file descriptor (`--args`), never from its argv.
 */
function bwrapArguments(
  workspaceDir: string,
  policy: SandboxPolicy,
  env: NodeJS.ProcessEnv,
  egress?: SandboxEgress,
): string[] {
  const args = [
    "--unshare-all",
    "--unshare-user",
    "--disable-userns",
    ...(policy.network === "full" ? ["--share-net"] : []),
    "--uid",
    String(SANDBOX_UID),
    "--gid",
    String(SANDBOX_UID),
    "--hostname",
    "sandbox",
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
    ...systemMounts(),
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--size",
    String(policy.limits.tmpBytes),
    "--tmpfs",
    SANDBOX_TMP,
    // After the private /tmp: a folder beneath /tmp (a checkout there) must not be hidden by it.
    ...(policy.readOnlyPaths ?? []).flatMap((dir) => ["--ro-bind", dir, dir]),
    "--bind",
    workspaceDir,
    SANDBOX_WORKSPACE_PATH,
    "--chdir",
    SANDBOX_WORKSPACE_PATH,
    ...(egress ? egressMounts(egress) : []),
    "--seccomp",
    String(SECCOMP_FD),
    "--clearenv",
  ];
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined) args.push("--setenv", name, value);
  }
  return args;
}

/**
 * How to run `bash -c script` for a tool call in `workspaceDir` (a real path). Under bwrap the
 * script sees the workspace at SANDBOX_WORKSPACE_PATH; with isolation off it runs in place.
 * Throws SandboxUnavailableError when the policy cannot be honoured (a network allowlist) or is
 * not allowed here (network "full" for a tenant the worker's setting does not name).
 */
export function bashCommandLine(
  workspaceDir: string,
  policy: SandboxPolicy,
  script: string,
  cgroup?: CallCgroup,
  /** The call's egress proxy (`startCallEgress`), for a network allowlist or secrets. */
  egress?: SandboxEgress,
): CommandLine {
  if (policy.network === "full" && namesSecrets(policy))
    throw new SandboxUnavailableError(
      'This run names tenant secrets and asks for network "full": secrets are injected by the egress proxy, which "full" bypasses. Nothing was run.',
    );
  if (policy.network === "full" && !fullNetworkAllowed(policy.fullNetwork, policy.tenantId))
    throw new SandboxUnavailableError(`This run asks for ${FULL_NETWORK_REFUSAL} Nothing was run.`);
  const allowlist = egressAllowlist(policy) !== undefined;
  if (allowlist && (policy.isolation === "off" || egress === undefined)) {
    throw new SandboxUnavailableError(
      `This run ${typeof policy.network === "object" ? "asks for a network allowlist" : "names tenant secrets"}, which only a sandboxed worker with its egress proxy can ${typeof policy.network === "object" ? "enforce" : "inject"}; nothing was run.`,
    );
  }
  const body = limitsPrelude(policy.limits) + (allowlist ? EGRESS_BRIDGE : "") + script;
  const line: CommandLine =
    policy.isolation === "off"
      ? {
          file: "bash",
          args: ["-c", body],
          env: {
            ...commandEnvironment({ passEnv: policy.passEnv, sandboxed: false, source: policy.hostEnv }),
            ...policy.extraEnv,
          },
          cwd: workspaceDir,
        }
      : {
          file: requireBwrap(),
          // bwrap takes the command itself from its argv only; it holds nothing of the host.
          args: ["--args", String(ARGS_FD), "--", "bash", "-c", body],
          inputs: [
            nulSeparated(
              bwrapArguments(
                workspaceDir,
                policy,
                {
                  ...commandEnvironment({ passEnv: policy.passEnv, sandboxed: true, source: policy.hostEnv }),
                  ...policy.extraEnv,
                  ...(allowlist ? EGRESS_PROXY_ENV : {}),
                  ...egress?.env,
                },
                egress,
              ),
            ),
            seccompProgram(),
          ],
          env: {},
          cwd: "/",
        };
  return cgroup ? joiningCgroup(cgroup, line) : line;
}

/**
 * The egress proxy's files inside the sandbox, each bound read-only on its own (never the host
 * folder holding them): the socket — connect() needs no write access to a bound socket — and,
 * with secrets, the call CA and the combined bundle, also over the system bundle's path (after
 * /etc). /run is a tmpfs made read-only once they are in place, so the sandbox can neither
 * remove, move nor shadow them.
 */
function egressMounts(egress: SandboxEgress): string[] {
  const args = ["--tmpfs", "/run", "--ro-bind", egress.socketPath, EGRESS_INSIDE.socket];
  if (egress.ca) {
    args.push("--ro-bind", egress.ca.certificateFile, EGRESS_INSIDE.certificate);
    args.push("--ro-bind", egress.ca.bundleFile, EGRESS_INSIDE.bundle);
    if (existsSync(SYSTEM_CA_BUNDLE)) args.push("--ro-bind", egress.ca.bundleFile, SYSTEM_CA_BUNDLE);
  }
  return [...args, "--remount-ro", "/run"];
}
/** The port of the in-sandbox bridge to the proxy (the sandbox's own loopback). */
const EGRESS_BRIDGE_PORT = 3128;
/** What tools read to find the proxy (curl, git, pip and npm honour these). */
const EGRESS_PROXY_ENV = Object.fromEntries(
  ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"].map((name) => [
    name,
    `http://127.0.0.1:${EGRESS_BRIDGE_PORT}`,
  ]),
);
/**
 * Starts the bridge from the sandbox's loopback to the proxy's socket (socat, in the background;
 * it ends with the sandbox's PID namespace) and waits until it listens.
 */
const EGRESS_BRIDGE = `socat TCP-LISTEN:${EGRESS_BRIDGE_PORT},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:${EGRESS_INSIDE.socket} 2>/dev/null &
for _ in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/${EGRESS_BRIDGE_PORT}) 2>/dev/null && break; sleep 0.01; done
`;

/** Arguments as bwrap's `--args` reads them; a NUL inside one (an environment value) would split it. */
function nulSeparated(args: readonly string[]): Buffer {
  if (args.some((arg) => arg.includes("\0")))
    throw new SandboxUnavailableError("A sandbox argument contains a NUL character; nothing was run.");
  return Buffer.from(args.map((arg) => `${arg}\0`).join(""));
}

function requireBwrap(): string {
  const found = findBwrap();
  if (!found)
    throw new SandboxUnavailableError("bubblewrap (bwrap) is not installed on this worker; nothing was run.");
  return found;
}

/** `line` started by a shell that first moves itself into the call's cgroups, so no fork escapes them. */
function joiningCgroup(cgroup: CallCgroup, line: CommandLine): CommandLine {
  const join =
    'for f in "$@"; do [ "$f" = -- ] && break; echo $$ > "$f" || exit 126; shift; done; shift; exec "$@"';
  return {
    ...line,
    file: "/bin/sh",
    args: ["-c", join, "keel-cgroup-join", ...cgroup.procsFiles, "--", line.file, ...line.args],
  };
}

export type SandboxProbe = { ok: true } | { ok: false; reason: string };

/** Starts an empty sandbox once: can this machine run tool calls under bwrap? */
export function probeSandbox(): SandboxProbe {
  const dir = mkdtempSync(path.join(tmpdir(), "keel-sandbox-probe-"));
  try {
    if (!findBwrap()) return { ok: false, reason: "bubblewrap (bwrap) is not installed" };
    const line = bashCommandLine(dir, DEFAULT_SANDBOX_POLICY, "true");
    // spawnSync cannot feed pipes: the inputs go through files.
    const inputFds = (line.inputs ?? []).map((data, i) => {
      const file = path.join(dir, `input-${i}`);
      writeFileSync(file, data);
      return openSync(file, "r");
    });
    const result = spawnSync(line.file, line.args, {
      env: line.env,
      cwd: line.cwd,
      timeout: 15_000,
      stdio: ["ignore", "pipe", "pipe", ...inputFds],
    });
    for (const fd of inputFds) closeSync(fd);
    if (result.error) return { ok: false, reason: result.error.message };
    if (result.status !== 0) {
      const stderr = result.stderr.toString().trim();
      return { ok: false, reason: stderr || `bwrap exited with ${result.status ?? result.signal}` };
    }
    return { ok: true };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Absolute path of `bwrap` on the worker's PATH (looked up per call: spawn with an empty env would not). */
function findBwrap(): string | undefined {
  return findExecutable("bwrap");
}

/** `name` on the worker's PATH, if it is there. */
export function findExecutable(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(":")) {
    const candidate = dir && path.join(dir, name);
    if (candidate && existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** Limits the kernel reported as hit during a call (from its cgroups; all false without them). */
export interface LimitHits {
  processes: boolean;
  memory: boolean;
  /** The call's processes together used more CPU time than allowed (and were ended). */
  cpu: boolean;
  /**
   * The workspace quota bounded the call's file size or ended it: its own notice
   * (workspace-quota.ts) replaces the file-size one.
   */
  workspace?: boolean;
}

/** A sentence about a command that failed on a sandbox limit, or undefined. */
export function limitNotice(
  output: string,
  exitCode: number | null,
  limits: ProcessLimits,
  hits: LimitHits = { processes: false, memory: false, cpu: false },
): string | undefined {
  const mib = (bytes: number) => `${Math.round(bytes / 1024 ** 2)} MB`;
  if (exitCode === 128 + 25 || /File size limit exceeded/.test(output))
    return hits.workspace ? undefined : `[sandbox limit: files are limited to ${mib(limits.fileSizeBytes)}]`;
  if (hits.processes || /fork: (retry: )?Resource temporarily unavailable|Cannot fork/i.test(output))
    return `[sandbox limit: at most ${limits.processes} processes and threads]`;
  if (
    hits.memory ||
    /MemoryError|Cannot allocate memory|out of memory|bad_alloc|heap out of memory/i.test(output)
  )
    return `[sandbox limit: memory is limited to ${mib(limits.memoryBytes)}]`;
  // SIGXCPU: RLIMIT_CPU of one process (bash reports "CPU time limit exceeded" for its children).
  if (hits.cpu || exitCode === 128 + 24 || /CPU time limit exceeded/.test(output))
    return `[sandbox limit: CPU time is limited to ${limits.cpuSeconds} seconds per call]`;
  return undefined;
}
