/**
 * Escape attempts through `bash` under the bubblewrap sandbox: each must be refused or harmless.
 * The worker side is real: another tenant's workspace next to this one, secrets in the worker's
 * environment, an HTTP server and a Unix socket server on the worker's loopback.
 */

import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readlinkSync } from "node:fs";
import * as fs from "node:fs/promises";
import { createServer, type Server } from "node:http";
import * as net from "node:net";
import { networkInterfaces } from "node:os";
import * as path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { BashDetails } from "../../../src/tools/bash";
import { cgroupSupport, removeOrphanCgroups } from "../../../src/tools/cgroup";
import { DEFAULT_SANDBOX_POLICY, probeSandbox, type SandboxPolicy } from "../../../src/tools/sandbox";
import { prepareWorkspace, workspaceFor } from "../../../src/tools/workspace";
import { makeSandbox, removeSandbox, type Sandbox, textOf } from "./helpers";

const OTHER_SECRET = "other-tenant-secret-7d1f";
const OUTSIDE_SECRET = "top secret";
const HTTP_SECRET = "loopback-http-secret-51a2";
const SOCKET_SECRET = "unix-socket-secret-9c3e";
const ENV_SECRETS: Record<string, string> = {
  OPENAI_API_KEY: "sk-env-secret-openai-1",
  ANTHROPIC_API_KEY: "sk-ant-env-secret-2",
  AWS_SECRET_ACCESS_KEY: "aws-env-secret-3",
  AWS_ACCESS_KEY_ID: "AKIAENVSECRET4",
  KEEL_TEMPORAL_API_KEY: "temporal-env-secret-5",
  KEEL_S3_SECRET_ACCESS_KEY: "s3-env-secret-6",
  PLAIN_WORKER_SETTING: "worker-setting-not-allowlisted-7",
};
const ALL_SECRETS = [OTHER_SECRET, OUTSIDE_SECRET, HTTP_SECRET, SOCKET_SECRET, ...Object.values(ENV_SECRETS)];

const LIMITS = {
  memoryBytes: 512 * 1024 ** 2,
  processes: 64,
  cpuSeconds: 20,
  fileSizeBytes: 8 * 1024 ** 2,
  wallTimeMs: 60_000,
  tmpBytes: 16 * 1024 ** 2,
};
const POLICY: SandboxPolicy = { ...DEFAULT_SANDBOX_POLICY, limits: LIMITS };

let sandbox: Sandbox;
let otherDir: string;
let httpServer: Server;
let httpPort: number;
let socketServer: net.Server;
let socketPath: string;
let before: string;
let otherBefore: string;
/** A process of the worker's user holding the secrets in its real environment (/proc/<pid>/environ). */
let workerProcess: ChildProcess;
const workerPid = () => workerProcess.pid ?? 0;

async function listTree(dir: string): Promise<string> {
  const entries = await fs.readdir(dir, { recursive: true, withFileTypes: true });
  const lines = await Promise.all(
    entries.map(async (entry) => {
      const full = path.join(entry.parentPath, entry.name);
      return entry.isFile() ? `${full}:${await fs.readFile(full, "utf8")}` : full;
    }),
  );
  return lines.sort().join("\n");
}

beforeAll(async () => {
  const probe = probeSandbox();
  if (!probe.ok) throw new Error(`bubblewrap must work for these tests (npm run bootstrap): ${probe.reason}`);
  for (const [name, value] of Object.entries(ENV_SECRETS)) process.env[name] = value;
  sandbox = await makeSandbox(POLICY);
  const other = workspaceFor(path.join(sandbox.base, "root"), "tenant2", "other-session");
  await prepareWorkspace(other);
  otherDir = other.dir;
  await fs.writeFile(path.join(otherDir, "secret.txt"), `${OTHER_SECRET}\n`);

  httpServer = createServer((_request, response) => response.end(HTTP_SECRET));
  await new Promise<void>((resolve) => httpServer.listen(0, "0.0.0.0", resolve));
  httpPort = (httpServer.address() as net.AddressInfo).port;
  socketPath = path.join(sandbox.base, "worker.sock");
  socketServer = net.createServer((socket) => socket.end(SOCKET_SECRET));
  await new Promise<void>((resolve) => socketServer.listen(socketPath, resolve));

  workerProcess = spawn("sleep", ["600"], {
    env: { ...ENV_SECRETS, PATH: process.env.PATH },
    stdio: "ignore",
  });

  before = await sandbox.snapshotOutside();
  otherBefore = await listTree(otherDir);
});

afterAll(async () => {
  workerProcess.kill("SIGKILL");
  for (const name of Object.keys(ENV_SECRETS)) delete process.env[name];
  await new Promise((resolve) => httpServer.close(resolve));
  await new Promise((resolve) => socketServer.close(resolve));
  await removeSandbox(sandbox);
});

/** The worker's first non-loopback IPv4 address (loopback when it has none). */
function hostAddress(): string {
  const all = Object.values(networkInterfaces()).flatMap((entries) => entries ?? []);
  return all.find((entry) => entry.family === "IPv4" && !entry.internal)?.address ?? "127.0.0.1";
}

const pythonConnect = (target: string) =>
  `python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print(s.recv(100))' ${target}`;

/** Shadow-file lines (`root:*:…`, `root:$6$…`); /etc/passwd's `root:x:…` is fine to see. */
const SHADOW_LINE = /^root:[*!$]/m;

/** [label, command]: every command is run by bash in the sandbox. */
const attempts: Array<[string, () => string]> = [
  // Other tenants' workspaces
  ["read another workspace by absolute path", () => `cat ${otherDir}/secret.txt`],
  ["read another workspace by ../", () => "cat ../../tenant2/other-session/secret.txt"],
  ["list the workspace root by ../", () => "ls -laR ../.. ; cat ../../*/*/secret.txt"],
  ["cd out of /workspace", () => "cd /workspace/../../.. && find . -name secret.txt -exec cat {} +"],
  ["symlink to another workspace", () => `ln -s ${otherDir} other && cat other/secret.txt`],
  ["relative symlink upwards", () => "ln -s ../../.. up && cat up/tenant2/other-session/secret.txt"],
  ["hard link to another workspace's file", () => `ln ${otherDir}/secret.txt stolen && cat stolen`],
  ["search the whole file system", () => `grep -rs ${OTHER_SECRET.slice(0, 12)} / 2>/dev/null | head`],
  ["find secret files everywhere", () => "find / -name secret.txt 2>/dev/null -exec cat {} +"],
  // The worker's processes and /proc
  ["the worker's root through /proc/<pid>/root", () => `cat /proc/${workerPid()}/root${otherDir}/secret.txt`],
  ["the worker's environ through /proc/<pid>/environ", () => `cat /proc/${workerPid()}/environ`],
  ["every environ in /proc", () => "cat /proc/*/environ | tr '\\0' '\\n'"],
  ["pid 1's root", () => `cat /proc/1/root${otherDir}/secret.txt`],
  [
    "the worker's cwd through /proc",
    () => `ls /proc/${process.pid}/cwd/ && cat /proc/${process.pid}/cmdline`,
  ],
  ["kill the worker", () => `kill -9 ${process.pid}`],
  // Environment
  ["print the environment", () => "env; set"],
  ["read /proc/self/environ", () => "cat /proc/self/environ | tr '\\0' '\\n'"],
  // Network
  [
    "HTTP to loopback with /dev/tcp",
    () => `exec 3<>/dev/tcp/127.0.0.1/${httpPort} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3`,
  ],
  ["HTTP to loopback with curl", () => `curl -sS --max-time 3 http://127.0.0.1:${httpPort}/`],
  [
    "HTTP to localhost with python",
    () =>
      `python3 -c 'import urllib.request; print(urllib.request.urlopen("http://localhost:${httpPort}", timeout=3).read())'`,
  ],
  ["the worker's Unix socket by path", () => pythonConnect(socketPath)],
  [
    "the worker's HTTP server on its network address",
    () => `curl -sS --max-time 3 http://${hostAddress()}:${httpPort}/`,
  ],
  ["resolve and reach an outside host", () => "curl -sS --max-time 3 http://example.com/"],
  // Writing outside the workspace
  ["write into another workspace", () => `echo pwned > ${otherDir}/pwned.txt`],
  ["write outside by absolute path", () => `echo pwned > ${sandbox.outside}/pwned.txt`],
  ["write into /etc", () => "echo pwned > /etc/pwned"],
  ["write into /usr", () => "touch /usr/bin/pwned"],
  ["overwrite a system binary", () => "cp /bin/true /bin/ls"],
  // Privileges and namespaces
  ["mount a tmpfs", () => "mount -t tmpfs none /mnt"],
  ["bind-mount the root", () => "mkdir -p r && mount --bind / r && ls r"],
  ["unshare a user namespace", () => "unshare -U -r cat /etc/shadow"],
  ["unshare a mount namespace", () => "unshare -m sh -c 'mount -t proc proc /proc; cat /proc/*/environ'"],
  ["nsenter the worker's namespaces", () => `nsenter -t ${workerPid()} -a cat ${otherDir}/secret.txt`],
  ["nsenter pid 1's mount namespace", () => `nsenter -t 1 -m cat ${otherDir}/secret.txt`],
  ["chroot into /proc/1/root", () => "chroot /proc/1/root cat /etc/shadow"],
  ["read /etc/shadow", () => "cat /etc/shadow"],
  ["the worker's home", () => "ls -la /root && cat /root/.bash_history"],
  ["/sys and cgroups", () => "ls /sys/fs/cgroup && cat /sys/fs/cgroup/memory/memory.limit_in_bytes"],
  ["device nodes", () => "ls /dev; cat /dev/sda 2>&1 | head -c 100; mknod x b 8 0"],
];

describe("bash in the sandbox", () => {
  it("has at least 30 escape attempts", () => {
    expect(attempts.length).toBeGreaterThanOrEqual(30);
  });

  it.each(attempts)("refused or harmless: %s", async (_label, command) => {
    const out = await sandbox.run("bash", { command: command(), timeout: 20 });
    const text = textOf(out);
    for (const secret of ALL_SECRETS) expect(text).not.toContain(secret);
    expect(text).not.toMatch(SHADOW_LINE);
  });

  it("the worker process is still alive", () => {
    expect(workerProcess.exitCode).toBeNull();
    expect(workerProcess.signalCode).toBeNull();
  });

  it("left the other workspace and everything outside untouched", async () => {
    expect(await sandbox.snapshotOutside()).toBe(before);
    expect(await listTree(otherDir)).toBe(otherBefore);
  });

  it("sees the workspace at /workspace, as an unprivileged user in its own PID namespace", async () => {
    await fs.writeFile(path.join(sandbox.workspace.dir, "mine.txt"), "mine\n");
    const out = await sandbox.run("bash", {
      command: "pwd; cat mine.txt; id -u; echo pids=$(ls /proc | grep -c '^[0-9]'); echo made > new.txt",
    });
    expect(out.isError).toBe(false);
    const lines = textOf(out).split("\n");
    expect(lines.slice(0, 3)).toEqual(["/workspace", "mine", "1000"]);
    expect(Number(lines[3]?.replace("pids=", ""))).toBeLessThan(10);
    expect(await fs.readFile(path.join(sandbox.workspace.dir, "new.txt"), "utf8")).toBe("made\n");
  });

  it("the file tools accept the paths commands see (/workspace/...)", async () => {
    await sandbox.run("bash", { command: "mkdir -p d && echo hello > d/f.txt" });
    expect(textOf(await sandbox.run("read", { path: "/workspace/d/f.txt" }))).toBe("hello");
    expect((await sandbox.run("write", { path: "/workspace/d/g.txt", content: "x" })).isError).toBe(false);
    expect(await fs.readFile(path.join(sandbox.workspace.dir, "d/g.txt"), "utf8")).toBe("x");
    const refused = await sandbox.run("read", { path: "/workspace/../etc/passwd" });
    expect(textOf(refused)).toMatch(/refused/);
  });

  it("has a private, writable /tmp that does not outlive the call", async () => {
    expect((await sandbox.run("bash", { command: "echo t > /tmp/t && cat /tmp/t" })).isError).toBe(false);
    expect((await sandbox.run("bash", { command: "cat /tmp/t" })).isError).toBe(true);
  });

  it("passes no worker variable unless configured", async () => {
    const text = textOf(await sandbox.run("bash", { command: "env" }));
    expect(text).toMatch(/^PATH=/m);
    expect(text).toMatch(/^HOME=\/tmp$/m);
    expect(text).not.toContain("PLAIN_WORKER_SETTING");
  });

  it("with network full, the same loopback server is reachable (the refusal above is the sandbox's)", async () => {
    const open = await makeSandbox({ ...POLICY, fullNetwork: "on", network: "full" });
    try {
      const out = await open.run("bash", { command: `curl -sS --max-time 5 http://127.0.0.1:${httpPort}/` });
      expect(textOf(out)).toBe(HTTP_SECRET);
    } finally {
      await removeSandbox(open);
    }
  });

  it("refuses network full without running anything unless the worker enables it for the tenant", async () => {
    const cases: Array<[SandboxPolicy["fullNetwork"], string | undefined, boolean]> = [
      ["off", "tenant1", false],
      [{ tenants: ["tenant2"] }, "tenant1", false],
      [{ tenants: ["tenant1"] }, undefined, false],
      [{ tenants: ["tenant1"] }, "tenant1", true],
    ];
    for (const [fullNetwork, tenantId, allowed] of cases) {
      const full = await makeSandbox({ ...POLICY, fullNetwork, tenantId, network: "full" });
      try {
        const out = await full.run("bash", { command: "touch ran" });
        expect({ fullNetwork, tenantId, isError: out.isError }).toEqual({
          fullNetwork,
          tenantId,
          isError: !allowed,
        });
        if (!allowed) {
          expect(textOf(out)).toContain("KEEL_SANDBOX_NETWORK_FULL");
          await expect(fs.stat(path.join(full.workspace.dir, "ran"))).rejects.toThrow();
        }
      } finally {
        await removeSandbox(full);
      }
    }
  });

  it("refuses a network allowlist where it cannot be enforced (sandbox off) without running anything", async () => {
    const allow = await makeSandbox({
      ...POLICY,
      isolation: "off",
      network: { allow: ["registry.npmjs.org"] },
    });
    try {
      const out = await allow.run("bash", { command: "touch ran" });
      expect(out.isError).toBe(true);
      expect(textOf(out)).toMatch(
        /network allowlist, which only a sandboxed worker with its egress proxy can enforce/,
      );
      await expect(fs.stat(path.join(allow.workspace.dir, "ran"))).rejects.toThrow();
    } finally {
      await removeSandbox(allow);
    }
  });
});

/** Processes (anywhere on the machine) inside the PID namespace with this `pid:[inode]` link. */
function processesInNamespace(pidNamespace: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/ns/pid`) === pidNamespace) pids.push(Number(entry));
    } catch {
      // Gone meanwhile, or not ours to inspect.
    }
  }
  return pids;
}

/** Processes left in the namespace once SIGKILLs sent at the end of a call have landed (≤ 2 s). */
async function settledProcesses(pidNamespace: string): Promise<number[]> {
  for (let i = 0; i < 40 && processesInNamespace(pidNamespace).length > 0; i++) {
    await sleep(50);
  }
  return processesInNamespace(pidNamespace);
}

async function namespaceOf(file: string): Promise<string> {
  const link = (await fs.readFile(path.join(sandbox.workspace.dir, file), "utf8")).trim();
  expect(link).toMatch(/^pid:\[\d+\]$/);
  return link;
}

describe("limits", () => {
  it("a fork bomb ends the call with a clear error, leaves no process behind, and the next call works", async () => {
    const out = await sandbox.run("bash", {
      command: "readlink /proc/self/ns/pid > ns-bomb; bomb() { bomb | bomb; }; bomb",
      timeout: 5,
    });
    expect(out.isError).toBe(true);
    expect(textOf(out)).toContain(`[sandbox limit: at most ${LIMITS.processes} processes and threads]`);
    expect(await settledProcesses(await namespaceOf("ns-bomb"))).toEqual([]);
    const next = await sandbox.run("bash", { command: "echo still fine" });
    expect(textOf(next)).toBe("still fine");
  }, 30_000);

  it("a large allocation fails inside the call with a clear error; the next call works", async () => {
    const out = await sandbox.run("bash", { command: "python3 -c 'x = bytearray(4 * 1024**3)'" });
    expect(out.isError).toBe(true);
    expect(textOf(out)).toContain("MemoryError");
    expect(textOf(out)).toContain("[sandbox limit: memory is limited to 512 MB]");
    expect(textOf(await sandbox.run("bash", { command: "echo ok" }))).toBe("ok");
  });

  it("a file over the size limit is cut off with a clear error", async () => {
    const out = await sandbox.run("bash", { command: "head -c 20000000 /dev/zero > big.bin" });
    expect(out.isError).toBe(true);
    expect(textOf(out)).toContain("[sandbox limit: files are limited to 8 MB]");
    expect((await fs.stat(path.join(sandbox.workspace.dir, "big.bin"))).size).toBeLessThanOrEqual(
      LIMITS.fileSizeBytes,
    );
  });

  it("the private /tmp is size-capped", async () => {
    const out = await sandbox.run("bash", {
      command: "for i in 1 2 3; do head -c 7000000 /dev/zero > /tmp/f$i; done",
    });
    expect(out.isError).toBe(true);
    expect(textOf(out)).toMatch(/No space left on device/);
  });

  it("the worker's wall-time limit applies without a timeout argument", async () => {
    const quick = await makeSandbox({ ...POLICY, limits: { ...LIMITS, wallTimeMs: 500 } });
    try {
      const out = await quick.run("bash", { command: "sleep 30" });
      expect(out.isError).toBe(true);
      expect(textOf(out)).toContain("Command timed out after 0.5 seconds (the wall-time limit of a command)");
      expect((out.details as BashDetails).timedOut).toBe(true);
    } finally {
      await removeSandbox(quick);
    }
  });

  it("an abort ends every process of the sandbox, background ones included", async () => {
    const controller = new AbortController();
    const running = sandbox.run(
      "bash",
      { command: "readlink /proc/self/ns/pid > ns-abort; (trap '' TERM; sleep 60) & sleep 60 & wait" },
      controller.signal,
    );
    let link = "";
    for (let i = 0; i < 100 && !link; i++) {
      await sleep(20);
      link = await fs.readFile(path.join(sandbox.workspace.dir, "ns-abort"), "utf8").catch(() => "");
    }
    const namespace = link.trim();
    expect(processesInNamespace(namespace).length).toBeGreaterThan(0);
    controller.abort();
    const out = await running;
    expect(textOf(out)).toContain("Command aborted");
    expect(await settledProcesses(namespace)).toEqual([]);
  });

  it("marks commands run without isolation", async () => {
    const off = await makeSandbox({ ...POLICY, isolation: "off" });
    try {
      const out = await off.run("bash", { command: "true" });
      expect((out.details as BashDetails).sandbox).toBe("off");
      expect((await sandbox.run("bash", { command: "true" })).details).not.toHaveProperty("sandbox");
    } finally {
      await removeSandbox(off);
    }
  });
});

describe("per-call cgroups", () => {
  it("are removed after each call, and orphans of dead workers are cleaned up", async () => {
    const support = cgroupSupport();
    if (!support.available) throw new Error(`this machine is expected to allow cgroups: ${support.reason}`);
    const ours = () =>
      Object.values(support.parents).flatMap((parent) =>
        readdirSync(parent).filter((name) => name.startsWith(`keel-call-${process.pid}-`)),
      );
    await sandbox.run("bash", { command: "true" });
    expect(ours()).toEqual([]);

    // A worker that died mid-call (pid 2^22 + 1 is above any pid_max default) left its cgroups.
    const orphans = Object.values(support.parents).map((parent) =>
      path.join(parent, "keel-call-4194305-0a1b2c"),
    );
    for (const orphan of orphans) await fs.mkdir(orphan);
    // Other processes on the machine may leave orphans too: ours must be among those removed.
    expect(removeOrphanCgroups(support.parents)).toEqual(expect.arrayContaining(orphans));
  });
});

/** Python that makes raw syscalls and prints `name: ok` or `name: <strerror>` for each. */
const SYSCALL_PROBE = `python3 - <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def call(name, nr, *args):
    r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
    print(name + ":", "ok" if r >= 0 else os.strerror(ctypes.get_errno()))
s = lambda text: ctypes.cast(ctypes.c_char_p(text), ctypes.c_void_p).value
call("ptrace", 101, 0, 0, 0, 0)                      # PTRACE_TRACEME
call("process_vm_readv", 310, os.getpid(), 0, 0, 0, 0, 0)
call("keyctl", 250, 0, -3, 1)                        # KEYCTL_GET_KEYRING_ID, session keyring
call("add_key", 248, s(b"user"), s(b"k"), s(b"v"), 1, -2)
call("unshare", 272, 0x10000000)                     # CLONE_NEWUSER
call("unshare_net", 272, 0x40000000)                 # CLONE_NEWNET
call("clone_newns", 56, 0x00020000 | 17, 0, 0, 0, 0) # CLONE_NEWNS | SIGCHLD
call("setns", 308, os.open("/proc/self/ns/net", os.O_RDONLY), 0)
call("personality", 135, 0x40000)                    # ADDR_NO_RANDOMIZE
call("mount", 165, s(b"none"), s(b"/tmp"), s(b"tmpfs"), 0, 0)
call("fsopen", 430, s(b"tmpfs"), 0)
call("open_tree", 428, -100, s(b"/tmp"), 1)          # OPEN_TREE_CLONE
call("userfaultfd", 323, 0)
call("bpf", 321, 0, 0, 0)
call("perf_event_open", 298, 0, 0, -1, -1, 0)
call("init_module", 175, 0, 0, s(b""))
call("reboot", 169, 0, 0, 0, 0)
call("kexec_load", 246, 0, 0, 0, 0)
call("swapon", 167, s(b"/tmp/x"), 0)
call("acct", 163, 0)
call("iopl", 172, 3)
call("chroot", 161, s(b"/tmp"))
call("open_by_handle_at", 304, -100, 0, 0)
PY`;

/** A 32-bit x86 syscall (int 0x80: getpid) made from a 64-bit process. */
const INT80_GETPID = `python3 - <<'PY'
import ctypes, mmap
code = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
code.write(b"\\xb8\\x14\\x00\\x00\\x00\\xcd\\x80\\xc3")  # mov eax, 20; int 0x80; ret
address = ctypes.addressof(ctypes.c_char.from_buffer(code))
print("int80 getpid:", ctypes.CFUNCTYPE(ctypes.c_int)(address)())
PY`;

describe("seccomp filter", () => {
  it("is installed, with no_new_privs", async () => {
    const out = textOf(
      await sandbox.run("bash", { command: "grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status" }),
    );
    expect(out).toMatch(/^NoNewPrivs:\s+1$/m);
    expect(out).toMatch(/^Seccomp:\s+2$/m);
  });

  it("denies namespaces, tracing, keyrings, mounts, modules and the rest with EPERM", async () => {
    const out = await sandbox.run("bash", { command: SYSCALL_PROBE });
    const lines = textOf(out).split("\n");
    expect(lines.length).toBe(23);
    for (const line of lines) expect(line).toMatch(/: Operation not permitted$/);
  });

  it("refuses the same through the usual tools", async () => {
    const commands = [
      "unshare -U true",
      "unshare -n true",
      "unshare -m true",
      "strace -f true",
      "mount -t tmpfs none /tmp",
      "setarch -R true",
      "gdb -batch -ex run --args /bin/true",
    ];
    for (const command of commands) {
      const out = await sandbox.run("bash", { command });
      expect({ command, isError: out.isError }).toEqual({ command, isError: true });
      expect(textOf(out)).toMatch(
        /Operation not permitted|must be superuser|not permitted|Permission denied/,
      );
    }
  });

  it("io_uring does not reach the kernel; node and git work without it", async () => {
    const probe = `python3 - <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
for name, nr, args in (("io_uring_setup", 425, (4, params)), ("io_uring_enter", 426, (0, 1, 0, 0, 0, 0)), ("io_uring_register", 427, (0, 0, 0, 0))):
    r = libc.syscall(nr, *args)
    print(name + ":", "ok" if r >= 0 else os.strerror(ctypes.get_errno()))
PY
UV_USE_IO_URING=1 node -e 'require("fs").promises.writeFile("f", "x").then(() => require("fs").readFile("f", "utf8", (e, d) => console.log("node", d)))'
git init -q r && git -C r -c user.email=a@b -c user.name=n commit -q --allow-empty -m one && echo git`;
    const roomy = await makeSandbox({ ...POLICY, limits: { ...LIMITS, memoryBytes: 2 * 1024 ** 3 } });
    const out = await roomy.run("bash", { command: probe, timeout: 60 }).finally(() => removeSandbox(roomy));
    expect(textOf(out).split("\n")).toEqual([
      "io_uring_setup: Function not implemented",
      "io_uring_enter: Function not implemented",
      "io_uring_register: Function not implemented",
      "node x",
      "git",
    ]);
  }, 60_000);

  it("kills a process making 32-bit x86 syscalls", async () => {
    const out = await sandbox.run("bash", { command: INT80_GETPID });
    expect(out.isError).toBe(true);
    expect(textOf(out)).not.toMatch(/int80 getpid: \d/);
    expect((out.details as BashDetails).exitCode).toBe(128 + 31); // SIGSYS
  });

  it("leaves ordinary work alone: git, python threads, node, a C compiler, pipes, background jobs", async () => {
    const command = [
      "set -e",
      "git init -q repo && cd repo && git -c user.email=a@b -c user.name=n commit -q --allow-empty -m one && git log --oneline | wc -l && cd ..",
      `python3 -c 'import threading; t = threading.Thread(target=print, args=("thread",)); t.start(); t.join()'`,
      // libuv's thread pool (fs) and V8's threads: clone with thread flags must pass.
      `node -e 'require("fs").readFile("/etc/hostname", () => console.log("node"))'`,
      `node -e 'const { Worker } = require("worker_threads"); new Worker("console.log(\\"worker\\")", { eval: true })'`,
      `node -e 'console.log(require("child_process").execSync("echo child").toString().trim())'`,
      "printf 'int main(){return 42;}' > m.c && cc m.c -o m && (./m || echo exit=$?)",
      "ls / | grep -c usr",
      "(sleep 0.2; echo background) & wait",
      "seq 1 1000 | sort -n | tail -1",
    ].join("\n");
    // Node reserves more address space than LIMITS allow: this call gets the default memory limit.
    const roomy = await makeSandbox({ ...POLICY, limits: { ...LIMITS, memoryBytes: 2 * 1024 ** 3 } });
    const out = await roomy.run("bash", { command, timeout: 60 }).finally(() => removeSandbox(roomy));
    expect(textOf(out).split("\n")).toEqual([
      "1",
      "thread",
      "node",
      "worker",
      "child",
      "exit=42",
      "1",
      "background",
      "1000",
    ]);
    expect(out.isError).toBe(false);
  }, 90_000);
});

describe("the command's view of the host", () => {
  const PASSED_VALUE = "passed-value-not-in-argv-3f9a";

  it("no environment value and no host path appears in any /proc/*/cmdline", async () => {
    process.env.KEEL_TEST_PASSED_SETTING = PASSED_VALUE;
    const passing = await makeSandbox({
      ...POLICY,
      passEnv: ["KEEL_TEST_PASSED_SETTING"],
      hostEnv: process.env,
    });
    try {
      const out = await passing.run("bash", {
        command:
          "echo \"env=$KEEL_TEST_PASSED_SETTING\"; for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done",
      });
      const text = textOf(out);
      expect(text).toContain(`env=${PASSED_VALUE}`);
      const cmdlines = text.split("\n").slice(1).join("\n");
      expect(cmdlines).toContain("bwrap --args 3 -- bash -c");
      expect(cmdlines).not.toContain(PASSED_VALUE);
      expect(cmdlines).not.toContain(passing.base);
      expect(cmdlines).not.toContain("tenant1");
      expect(cmdlines).not.toContain("/tmp/");
    } finally {
      delete process.env.KEEL_TEST_PASSED_SETTING;
      await removeSandbox(passing);
    }
  });

  it("a read-only folder the operator names is visible at its path, even beneath /tmp, and cannot be written", async () => {
    // makeSandbox's base is beneath the host's /tmp, as a checkout in /tmp would be.
    const shared = path.join(sandbox.base, "programs");
    await fs.mkdir(shared);
    await fs.writeFile(path.join(shared, "tool.txt"), "program\n");
    const reading = await makeSandbox({ ...POLICY, readOnlyPaths: [shared] });
    try {
      const out = await reading.run("bash", {
        command: `cat ${shared}/tool.txt; touch ${shared}/x 2>&1; echo done`,
      });
      const text = textOf(out);
      expect(text).toContain("program");
      expect(text).toContain("Read-only file system");
    } finally {
      await removeSandbox(reading);
    }
  });

  it("the workspace is mounted nosuid and nodev; mountinfo names its host path, which leads nowhere", async () => {
    const out = textOf(
      await sandbox.run("bash", {
        command: "awk '$5 == \"/workspace\" { print $4; print $6 }' /proc/self/mountinfo",
      }),
    );
    const [hostPath, options] = out.split("\n");
    expect(options?.split(",")).toEqual(expect.arrayContaining(["nosuid", "nodev"]));
    // What docs/tools.md states: the path is visible, and reaching it from inside finds nothing.
    expect(hostPath).toBe(sandbox.workspace.dir);
    const reach = await sandbox.run("bash", { command: `ls ${hostPath}` });
    expect(reach.isError).toBe(true);
  });

  it("a setuid binary in the workspace gives no privilege, and none can be made", async () => {
    const binary = path.join(sandbox.workspace.dir, "suid-id");
    await fs.copyFile("/usr/bin/id", binary);
    await fs.chown(binary, 1234, 1234);
    await fs.chmod(binary, 0o6755);
    const out = textOf(
      await sandbox.run("bash", {
        command: [
          "stat -c %A suid-id; ./suid-id -u; ./suid-id -g",
          // Made inside, such a file would be a setuid file of the worker's user on the host's disk.
          "cp /usr/bin/id own-id; chmod u+s own-id; chmod g+s own-id; stat -c %A own-id",
          `perl -e 'use Fcntl; sysopen(F, "made", O_CREAT|O_WRONLY, 04755) or print "open: $!\\n"'`,
        ].join("; "),
      }),
    );
    expect(out.split("\n")).toEqual([
      "-rwsr-sr-x",
      "1000",
      "1000",
      "chmod: changing permissions of 'own-id': Operation not permitted",
      "chmod: changing permissions of 'own-id': Operation not permitted",
      "-rwxr-xr-x",
      "open: Operation not permitted",
    ]);
    expect((await fs.stat(path.join(sandbox.workspace.dir, "own-id"))).mode & 0o7777).toBe(0o755);
    await expect(fs.stat(path.join(sandbox.workspace.dir, "made"))).rejects.toThrow();
  });

  it("cannot create device nodes", async () => {
    const out = await sandbox.run("bash", { command: "mknod null-copy c 1 3 && echo made" });
    expect(out.isError).toBe(true);
    expect(textOf(out)).toMatch(/Operation not permitted/);
    await expect(fs.stat(path.join(sandbox.workspace.dir, "null-copy"))).rejects.toThrow();
  });
});

describe("CPU limit", () => {
  let cpu: Sandbox;
  beforeAll(async () => {
    cpu = await makeSandbox({ ...POLICY, limits: { ...LIMITS, cpuSeconds: 2 } });
  });
  afterAll(() => removeSandbox(cpu));

  it("a busy loop ends with a clear error; the next call works", async () => {
    const out = await cpu.run("bash", { command: "while :; do :; done", timeout: 30 });
    expect(out.isError).toBe(true);
    expect(textOf(out)).toContain("[sandbox limit: CPU time is limited to 2 seconds per call]");
    expect((out.details as BashDetails).timedOut).toBeUndefined();
    expect(textOf(await cpu.run("bash", { command: "echo ok" }))).toBe("ok");
  });

  it("counts every process of the call together (each below the per-process limit)", async () => {
    const busy = `python3 -c 'import time
while time.process_time() < 1.5: pass'`;
    const out = await cpu.run("bash", {
      command: `for i in 1 2 3 4; do ${busy} & done; wait; echo finished`,
      timeout: 30,
    });
    expect(out.isError).toBe(true);
    expect(textOf(out)).not.toContain("finished");
    expect(textOf(out)).toContain("[sandbox limit: CPU time is limited to 2 seconds per call]");
  });
});
