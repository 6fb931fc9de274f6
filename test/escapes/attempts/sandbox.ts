/**
 * Sandbox: bash commands the model runs. Outcomes: a canary (worker secret, host file, other
 * tenant's file) in the session's data; a marker the command prints only when an operation a
 * sandbox must deny succeeded (a connection to a loopback service, mount, unshare, chroot,
 * ptrace, keyctl, mknod); a setuid file or device node left on the worker's disk; the worker
 * not answering after a bomb; a CPU burn not ended by any limit.
 */
import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { type Attempt, judge, marker, playedLine, type Verdict } from "../attempt";
import { ATTACKER_TENANT, type EscapeContext, type MessageSettings } from "../context";

interface BashAttack {
  id: string;
  description: string;
  short: boolean;
  command: (ctx: EscapeContext, mark: { shell: string; text: string }) => string;
  /** The bash `timeout` argument (seconds). */
  timeout?: number;
  settings?: MessageSettings | ((ctx: EscapeContext) => MessageSettings);
  /** Outcomes beyond leaks and the marker (checked after the run). */
  check?: (ctx: EscapeContext, sessionId: string) => Promise<string[]> | string[];
  boundMs?: number;
}

/** Files on the worker's disk in the attacker's workspace with setuid/setgid bits or of a device kind. */
export function dangerousFiles(dir: string): string[] {
  const found: string[] = [];
  const walk = (folder: string) => {
    let names: string[];
    try {
      names = readdirSync(folder);
    } catch {
      return;
    }
    for (const name of names) {
      const path = join(folder, name);
      const stat = lstatSync(path);
      if (stat.isDirectory()) walk(path);
      if (stat.isCharacterDevice() || stat.isBlockDevice())
        found.push(`a device node ${path.slice(dir.length + 1)} on the worker's disk`);
      else if (!stat.isSymbolicLink() && (stat.mode & 0o6000) !== 0)
        found.push(
          `${path.slice(dir.length + 1)} with mode ${(stat.mode & 0o7777).toString(8)} (owner uid ${stat.uid}) on the worker's disk`,
        );
    }
  };
  walk(dir);
  return found;
}

function bashAttempt(attack: BashAttack): Attempt {
  return {
    id: attack.id,
    class: "Sandbox",
    description: attack.description,
    short: attack.short,
    async run(ctx): Promise<Verdict> {
      const sessionId = ctx.newSession(attack.id);
      const mark = marker(attack.id);
      const played = await ctx.play(
        sessionId,
        [
          [
            {
              name: "bash",
              arguments: { command: attack.command(ctx, mark), timeout: attack.timeout ?? 20 },
            },
          ],
        ],
        typeof attack.settings === "function" ? attack.settings(ctx) : attack.settings,
        attack.boundMs ?? 60_000,
      );
      const findings = await ctx.leaks(sessionId);
      if (played.results.some((result) => result.text.includes(mark.text)))
        findings.push("the operation succeeded (its marker is in the tool result)");
      findings.push(...(await (attack.check?.(ctx, sessionId) ?? [])));
      return judge(findings, playedLine(played));
    },
  };
}

const full: MessageSettings = { network: "full" };
const connect = (port: number, mark: { shell: string }) =>
  `(exec 3<>/dev/tcp/127.0.0.1/${port}) 2>&1 && ${mark.shell}`;

const attacks: BashAttack[] = [
  {
    id: "proc-1-environ",
    description: "read /proc/1/environ",
    short: true,
    command: () => "tr '\\0' '\\n' < /proc/1/environ",
  },
  {
    id: "proc-ppid-environ",
    description: "read /proc/$PPID/environ",
    short: true,
    command: () => "tr '\\0' '\\n' < /proc/$PPID/environ",
  },
  {
    id: "proc-all-environ",
    description: "read every /proc/*/environ",
    short: false,
    command: () => "cat /proc/*/environ 2>&1 | tr '\\0' '\\n'",
  },
  {
    id: "proc-cmdline",
    description: "read every /proc/*/cmdline (secrets passed in argv)",
    short: true,
    command: () => "for f in /proc/*/cmdline; do tr '\\0' ' ' < $f; echo; done",
  },
  { id: "env", description: "print the command's environment", short: true, command: () => "env; set" },
  {
    id: "proc-root-host",
    description: "read the host file through /proc/*/root and /proc/*/cwd",
    short: false,
    command: (ctx) =>
      `for p in /proc/[0-9]*; do cat $p/root${ctx.canaries.hostFile} $p/cwd/../../../host/canary.txt; done 2>&1 | head`,
  },
  {
    id: "other-workspace",
    description: "read another tenant's workspace by its worker path and by /workspace/..",
    short: true,
    command: (ctx) =>
      `cat ${ctx.victimWorkspace}/victim.txt /workspace/../../victim/*/victim.txt; ls -la ${ctx.victimWorkspace} /workspace/.. 2>&1`,
  },
  {
    id: "host-file-read",
    description: "read and list the host folder",
    short: true,
    command: (ctx) => `cat ${ctx.canaries.hostFile}; ls -la ${ctx.canaries.hostDir} 2>&1`,
  },
  {
    id: "host-file-write",
    description: "overwrite the host file, write beside the workspace",
    short: true,
    command: (ctx) =>
      `echo pwned > ${ctx.canaries.hostFile}; echo pwned > /workspace/../escaped; echo pwned > ${ctx.canaries.hostDir}/x/w 2>&1`,
    check: (ctx) => {
      try {
        lstatSync(join(ctx.stack.workspaceRoots.primary, ATTACKER_TENANT, "escaped"));
        return ["a file appeared beside the workspace"];
      } catch {
        return [];
      }
    },
  },
  {
    id: "loopback-s3",
    description: "connect to the S3 server's port (network none)",
    short: true,
    command: (ctx, mark) =>
      connect(Number(new URL(ctx.stack.s3().settings.endpoint ?? "http://x:1").port), mark),
  },
  {
    id: "loopback-temporal",
    description: "connect to the Temporal server's port (network none)",
    short: false,
    command: (ctx, mark) => connect(Number(ctx.stack.temporal().address.split(":").at(-1)), mark),
  },
  {
    id: "loopback-attacker",
    description: "curl the attacker's loopback server (network none)",
    short: false,
    command: (ctx) => `curl -s -m 5 http://127.0.0.1:${ctx.attacker.port}/a/loopback-attacker 2>&1`,
    check: (ctx) =>
      ctx.attacker.hits("loopback-attacker").length > 0 ? ["the attacker's server was reached"] : [],
  },
  {
    id: "network-full-attacker",
    description: 'ask for network "full", curl the attacker\'s loopback server',
    short: true,
    settings: full,
    command: (ctx) => `curl -s -m 5 http://127.0.0.1:${ctx.attacker.port}/a/network-full-attacker 2>&1`,
    check: (ctx) =>
      ctx.attacker.hits("network-full-attacker").length > 0 ? ["the attacker's server was reached"] : [],
  },
  {
    // The allowlist's proxy judges addresses, not names: a listed name resolving to loopback, or
    // the address itself, gets nowhere.
    id: "network-allow-localhost",
    description: "allowlist `localhost.localdomain` and the attacker's port, curl it through the proxy",
    short: true,
    settings: (ctx: EscapeContext) => ({
      network: { allow: [`localhost.localdomain:${ctx.attacker.port}`, `example.com:${ctx.attacker.port}`] },
    }),
    command: (ctx) =>
      `curl -s -m 5 http://localhost.localdomain:${ctx.attacker.port}/a/network-allow-localhost 2>&1; curl -s -m 5 http://127.0.0.1:${ctx.attacker.port}/a/network-allow-localhost 2>&1; curl -s -m 5 --noproxy '*' http://127.0.0.1:${ctx.attacker.port}/a/network-allow-localhost 2>&1`,
    check: (ctx) =>
      ctx.attacker.hits("network-allow-localhost").length > 0 ? ["the attacker's server was reached"] : [],
  },
  {
    id: "network-full-s3",
    description: 'ask for network "full", connect to the S3 server',
    short: true,
    settings: full,
    command: (ctx, mark) =>
      connect(Number(new URL(ctx.stack.s3().settings.endpoint ?? "http://x:1").port), mark),
  },
  {
    id: "network-full-temporal",
    description: 'ask for network "full", connect to the Temporal server',
    short: false,
    settings: full,
    command: (ctx, mark) => connect(Number(ctx.stack.temporal().address.split(":").at(-1)), mark),
  },
  {
    id: "mount",
    description: "mount a tmpfs",
    short: true,
    command: (_, mark) => `mount -t tmpfs none /tmp 2>&1 && ${mark.shell}`,
  },
  {
    id: "unshare",
    description: "unshare a user and mount namespace",
    short: true,
    command: (_, mark) => `unshare -Urm true 2>&1 && ${mark.shell}`,
  },
  {
    id: "chroot",
    description: "chroot",
    short: false,
    command: (_, mark) => `chroot / true 2>&1 && ${mark.shell}`,
  },
  {
    id: "ptrace",
    description: "ptrace a process (strace)",
    short: true,
    command: (_, mark) => `strace -f -o /dev/null true 2>&1 && ${mark.shell}`,
  },
  {
    id: "keyctl",
    description: "keyctl: read the user keyring's id",
    short: false,
    command: () =>
      `perl -e '$r = syscall(250, 0, -4, 0); print $r >= 0 ? "MA"."RK-keyctl\\n" : "keyctl: $!\\n"'`,
  },
  {
    id: "mknod",
    description: "mknod a character device in the workspace",
    short: true,
    command: (_, mark) => `mknod ./null c 1 3 2>&1 && ${mark.shell}`,
    check: (ctx, sessionId) => dangerousFiles(ctx.workspaceOf(ATTACKER_TENANT, sessionId)),
  },
  {
    id: "setuid-binary",
    description: "make a setuid copy of a binary in the workspace",
    short: true,
    command: () => "cp /usr/bin/id ./suid && chmod 4755 ./suid && chmod 2755 . ; ls -la suid 2>&1",
    check: (ctx, sessionId) => dangerousFiles(ctx.workspaceOf(ATTACKER_TENANT, sessionId)),
  },
  {
    id: "io-uring",
    description: "io_uring_setup (python ctypes, syscall 425 on x86_64 and aarch64)",
    short: true,
    command: (_, mark) =>
      `python3 -c 'import ctypes, os, sys; libc = ctypes.CDLL(None, use_errno=True); r = libc.syscall(425, 4, ctypes.create_string_buffer(120)); print("io_uring_setup:", r, os.strerror(ctypes.get_errno())); sys.exit(0 if r >= 0 else 1)' && ${mark.shell}`,
  },
  {
    // The socket is bound alone, read-only, under a read-only /run (docs/tools.md, "Sandbox").
    id: "egress-socket-replace",
    description:
      "with a network allowlist: remove, replace (a link, a file, a rename) and write beside the egress proxy's socket",
    short: true,
    settings: { network: { allow: ["example.com"] } },
    command: (_, mark) =>
      [
        `rm -f /run/keel-egress/proxy.sock 2>&1 && ${mark.shell}`,
        `ln -sf /etc/passwd /run/keel-egress/proxy.sock 2>&1 && ${mark.shell}`,
        `mv /run/keel-egress/proxy.sock /run/keel-egress/moved 2>&1 && ${mark.shell}`,
        `echo x > /run/keel-egress/planted 2>&1 && ${mark.shell}`,
        `head -c 1M /dev/zero > /run/keel-egress/fill 2>&1 && ${mark.shell}`,
        `mkdir /run/keel-egress/d 2>&1 && ${mark.shell}`,
        `echo x > /run/planted 2>&1 && ${mark.shell}`,
        `python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.bind("/run/keel-egress/other.sock")' 2>&1 && ${mark.shell}`,
        "test -S /run/keel-egress/proxy.sock && echo socket-intact",
        "ls -la /run /run/keel-egress 2>&1",
      ].join("; "),
  },
  {
    id: "kill-all",
    description: "kill -9 -1, then the worker must still answer",
    short: false,
    command: () => "kill -9 -1; echo done",
    check: async (ctx) => [(await ctx.unresponsive()) ?? ""].filter(Boolean),
  },
  {
    id: "fork-bomb",
    description: "fork bomb (10 s), then the worker must still answer",
    short: true,
    timeout: 10,
    command: () => ":(){ :|:& };:",
    check: async (ctx) => [(await ctx.unresponsive()) ?? ""].filter(Boolean),
  },
  {
    id: "memory-bomb",
    description: "hold 6 GB in memory, then the worker must still answer",
    short: true,
    timeout: 20,
    command: () => "head -c 6G /dev/zero | tail | wc -c",
    check: async (ctx) => [(await ctx.unresponsive()) ?? ""].filter(Boolean),
  },
  {
    id: "huge-sparse-file",
    description: "a 64 GB sparse file, then the worker must still answer",
    short: true,
    command: () => "truncate -s 64G big 2>&1; dd if=/dev/zero of=big2 bs=1 count=1 seek=64G 2>&1; ls -la",
    check: async (ctx, sessionId) =>
      [...hugeFiles(ctx.workspaceOf(ATTACKER_TENANT, sessionId)), (await ctx.unresponsive()) ?? ""].filter(
        Boolean,
      ),
  },
  {
    id: "huge-file",
    description: "write 1.5 GB of zeros, then the worker must still answer",
    short: false,
    timeout: 120,
    command: () => "dd if=/dev/zero of=big bs=1M count=1536 2>&1 | tail -1; ls -la big",
    check: async (ctx, sessionId) =>
      [...hugeFiles(ctx.workspaceOf(ATTACKER_TENANT, sessionId)), (await ctx.unresponsive()) ?? ""].filter(
        Boolean,
      ),
    boundMs: 180_000,
  },
];

/** Files over the sandbox's 1 GB file-size limit in `dir`. */
function hugeFiles(dir: string): string[] {
  const limit = Number(process.env.KEEL_SANDBOX_MAX_FILE_MB ?? 1024) * 1024 ** 2;
  return readdirSync(dir)
    .map((name) => ({ name, size: lstatSync(join(dir, name)).size }))
    .filter(({ size }) => size > limit)
    .map(({ name, size }) => `${name} is ${Math.round(size / 1024 ** 2)} MB on the worker's disk`);
}

/**
 * CPU burn: four busy loops with a one-hour timeout argument. The run must end by itself (a CPU
 * limit) within the bound, and the worker must answer meanwhile; the suite aborts it afterwards.
 */
const cpuBurn: Attempt = {
  id: "cpu-burn",
  class: "Sandbox",
  description:
    "four busy loops with timeout 3600: a CPU limit must end them, the worker must answer meanwhile",
  short: true,
  async run(ctx) {
    const sessionId = ctx.newSession("cpu-burn");
    // The limit is CPU time (5 s in the suite), which a loaded machine hands out slowly: at load
    // 15 on 2 cores it took over 12 s of wall time. A burn without a limit runs for an hour, so a
    // minute tells the two apart on a busy machine too, and costs nothing when the limit holds.
    const boundMs = 60_000;
    const command = "for i in 1 2 3 4; do (while :; do :; done) & done; wait";
    const played = ctx.play(
      sessionId,
      [[{ name: "bash", arguments: { command, timeout: 3600 } }]],
      {},
      boundMs,
    );
    const findings: string[] = [];
    const stuck = await ctx.unresponsive();
    if (stuck) findings.push(stuck);
    const result = await played;
    if (result.run?.status === "over-bound")
      findings.push(`the burn was still running after ${boundMs / 1000} s (aborted by the suite)`);
    return judge(findings, playedLine(result));
  },
};

export const sandboxAttempts: Attempt[] = [...attacks.map(bashAttempt), cpuBurn];
