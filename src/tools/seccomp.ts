/**
 * The seccomp filter of tool processes: a classic-BPF program (`struct sock_filter[]`) that bwrap
 * installs (`--seccomp FD`) right before it executes the command, after its own namespace setup.
 *
 * It denies what an unprivileged process needs for kernel attack surface or for reaching out of
 * its namespaces, none of which a build or a test needs: new namespaces and joining others,
 * tracing and reading other processes' memory, the kernel keyring, eBPF, perf events,
 * userfaultfd, kernel modules, every mount API, swap, reboot, kexec, process accounting, quotas,
 * port I/O, file handles (`open_by_handle_at`), chroot, the kernel log, personality flags
 * other than the default (ADDR_NO_RANDOMIZE would turn address randomisation off), setuid or
 * setgid bits in any mode a file is created or changed with (`SETID_BITS`), and io_uring (a large
 * kernel surface with a history of privilege escalations, and a way to do I/O that no later
 * syscall check sees). Denied calls fail with EPERM; `clone3` fails with ENOSYS so the C library
 * falls back to `clone`, whose flags the filter can inspect (clone3 passes them in memory, out of
 * a filter's reach), and the io_uring calls fail with ENOSYS, as on a kernel built without it, so
 * its users (libuv in Node, liburing) take their ordinary fallback. A syscall of
 * another architecture (32-bit x86 through `int 0x80`, 32-bit ARM) kills the process, and so do
 * x32 syscalls on x86_64: the filter only knows the 64-bit numbers.
 */

/** `struct seccomp_data`: offsets of the syscall number, the architecture and the arguments. */
const DATA_NR = 0;
const DATA_ARCH = 4;
/** Low 32 bits of argument `i` (little-endian: x86_64 and aarch64). */
const dataArgLow = (i: number) => 16 + 8 * i;

const AUDIT_ARCH_X86_64 = 0xc000003e;
const AUDIT_ARCH_AARCH64 = 0xc00000b7;
/** Syscall numbers at or above this on x86_64 are the x32 ABI (`__X32_SYSCALL_BIT`). */
const X32_SYSCALL_BIT = 0x40000000;

export const SECCOMP_RET_KILL_PROCESS = 0x80000000;
export const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO = 0x00050000;
export const EPERM = 1;
export const ENOSYS = 38;
export const retErrno = (errno: number) => (SECCOMP_RET_ERRNO | errno) >>> 0;

/** BPF opcodes used here (linux/bpf_common.h). */
export const BPF = {
  LD_W_ABS: 0x20,
  JEQ_K: 0x15,
  JGE_K: 0x35,
  JSET_K: 0x45,
  RET_K: 0x06,
} as const;

/** One step of a filter before assembly: jump targets are labels, resolved by `assemble`. */
export type Step =
  | { label: string }
  | { load: number }
  | { jump: "eq" | "ge" | "set"; k: number; to: string; otherwise?: string }
  | { ret: number };

const JUMP_CODES = { eq: BPF.JEQ_K, ge: BPF.JGE_K, set: BPF.JSET_K } as const;

/**
 * Assembles steps into `struct sock_filter` records (8 bytes each, little-endian: u16 code, u8 jt,
 * u8 jf, u32 k). A jump's `otherwise` defaults to the next instruction. Throws on an unknown or backward
 * label and on a jump farther than 255 instructions (classic BPF's limit).
 */
export function assemble(steps: readonly Step[]): Buffer {
  const labels = new Map<string, number>();
  let count = 0;
  for (const step of steps) {
    if ("label" in step) {
      if (labels.has(step.label)) throw new Error(`seccomp: label ${step.label} defined twice`);
      labels.set(step.label, count);
    } else count++;
  }
  const out = Buffer.alloc(count * 8);
  let pc = 0;
  const offset = (label: string | undefined): number => {
    if (label === undefined) return 0;
    const target = labels.get(label);
    if (target === undefined) throw new Error(`seccomp: unknown label ${label}`);
    const distance = target - pc - 1;
    if (distance < 0 || distance > 255)
      throw new Error(`seccomp: jump to ${label} out of range (${distance})`);
    return distance;
  };
  for (const step of steps) {
    if ("label" in step) continue;
    let code: number;
    let jt = 0;
    let jf = 0;
    let k: number;
    if ("load" in step) {
      code = BPF.LD_W_ABS;
      k = step.load;
    } else if ("ret" in step) {
      code = BPF.RET_K;
      k = step.ret;
    } else {
      code = JUMP_CODES[step.jump];
      k = step.k;
      jt = offset(step.to);
      jf = offset(step.otherwise);
    }
    out.writeUInt16LE(code, pc * 8);
    out.writeUInt8(jt, pc * 8 + 2);
    out.writeUInt8(jf, pc * 8 + 3);
    out.writeUInt32LE(k >>> 0, pc * 8 + 4);
    pc++;
  }
  return out;
}

/** Syscalls denied outright (EPERM), by name. */
const DENIED = [
  "ptrace",
  "process_vm_readv",
  "process_vm_writev",
  "keyctl",
  "add_key",
  "request_key",
  "bpf",
  "perf_event_open",
  "userfaultfd",
  "init_module",
  "finit_module",
  "delete_module",
  "mount",
  "umount2",
  "pivot_root",
  "move_mount",
  "open_tree",
  "fsopen",
  "fsconfig",
  "fsmount",
  "fspick",
  "mount_setattr",
  "swapon",
  "swapoff",
  "reboot",
  "kexec_load",
  "kexec_file_load",
  "acct",
  "quotactl",
  "quotactl_fd",
  "iopl",
  "ioperm",
  "setns",
  "open_by_handle_at",
  "name_to_handle_at",
  "chroot",
  "lookup_dcookie",
  "vhangup",
  "syslog",
] as const;
/** Syscalls whose arguments the filter reads, or that fail with ENOSYS so a fallback is used. */
type Checked =
  | "clone"
  | "clone3"
  | "unshare"
  | "personality"
  | "open"
  | "openat"
  | "openat2"
  | "creat"
  | "chmod"
  | "fchmod"
  | "fchmodat"
  | "fchmodat2"
  | "mknod"
  | "mknodat"
  | "io_uring_setup"
  | "io_uring_enter"
  | "io_uring_register";
export type SyscallName = (typeof DENIED)[number] | Checked;

/** Syscall numbers per architecture (x86_64: asm/unistd_64.h; aarch64: asm-generic/unistd.h). */
export const SYSCALLS: Record<"x86_64" | "aarch64", Partial<Record<SyscallName, number>>> = {
  x86_64: {
    ptrace: 101,
    process_vm_readv: 310,
    process_vm_writev: 311,
    keyctl: 250,
    add_key: 248,
    request_key: 249,
    bpf: 321,
    perf_event_open: 298,
    userfaultfd: 323,
    init_module: 175,
    finit_module: 313,
    delete_module: 176,
    mount: 165,
    umount2: 166,
    pivot_root: 155,
    move_mount: 429,
    open_tree: 428,
    fsopen: 430,
    fsconfig: 431,
    fsmount: 432,
    fspick: 433,
    mount_setattr: 442,
    swapon: 167,
    swapoff: 168,
    reboot: 169,
    kexec_load: 246,
    kexec_file_load: 320,
    acct: 163,
    quotactl: 179,
    quotactl_fd: 443,
    iopl: 172,
    ioperm: 173,
    setns: 308,
    open_by_handle_at: 304,
    name_to_handle_at: 303,
    chroot: 161,
    lookup_dcookie: 212,
    vhangup: 153,
    syslog: 103,
    clone: 56,
    clone3: 435,
    unshare: 272,
    personality: 135,
    open: 2,
    openat: 257,
    openat2: 437,
    creat: 85,
    chmod: 90,
    fchmod: 91,
    fchmodat: 268,
    fchmodat2: 452,
    mknod: 133,
    mknodat: 259,
    io_uring_setup: 425,
    io_uring_enter: 426,
    io_uring_register: 427,
  },
  // No iopl/ioperm on aarch64.
  aarch64: {
    ptrace: 117,
    process_vm_readv: 270,
    process_vm_writev: 271,
    keyctl: 219,
    add_key: 217,
    request_key: 218,
    bpf: 280,
    perf_event_open: 241,
    userfaultfd: 282,
    init_module: 105,
    finit_module: 273,
    delete_module: 106,
    mount: 40,
    umount2: 39,
    pivot_root: 41,
    move_mount: 429,
    open_tree: 428,
    fsopen: 430,
    fsconfig: 431,
    fsmount: 432,
    fspick: 433,
    mount_setattr: 442,
    swapon: 224,
    swapoff: 225,
    reboot: 142,
    kexec_load: 104,
    kexec_file_load: 294,
    acct: 89,
    quotactl: 60,
    quotactl_fd: 443,
    setns: 268,
    open_by_handle_at: 265,
    name_to_handle_at: 264,
    chroot: 51,
    lookup_dcookie: 18,
    vhangup: 58,
    syslog: 116,
    clone: 220,
    clone3: 435,
    unshare: 97,
    personality: 92,
    // No open, creat, chmod or mknod on aarch64: only their *at forms.
    openat: 56,
    openat2: 437,
    fchmod: 52,
    fchmodat: 53,
    fchmodat2: 452,
    mknodat: 33,
    io_uring_setup: 425,
    io_uring_enter: 426,
    io_uring_register: 427,
  },
};

/** CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET. */
const CLONE_NEW_FLAGS =
  0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000;
/** unshare also takes CLONE_NEWTIME (0x80, which clone reads as part of the exit signal). */
const UNSHARE_NEW_FLAGS = CLONE_NEW_FLAGS | 0x00000080;
/**
 * S_ISUID | S_ISGID. A tool process runs as a user that is the worker's own user outside the
 * sandbox (root on many hosts), so a setuid file it makes is a setuid file of that user on the
 * host's disk; the workspace mount is nosuid inside, but not for whoever runs it outside. So no
 * mode a process sets or creates a file with may carry them (EPERM).
 */
const SETID_BITS = 0o6000;
/** personality(2) arguments allowed: PER_LINUX, PER_LINUX32 (uname reports i686) and the query. */
const ALLOWED_PERSONALITIES = [0x0, 0x8, 0xffffffff];

function archSteps(arch: keyof typeof SYSCALLS): Step[] {
  const table = SYSCALLS[arch];
  const nr = (name: SyscallName): number | undefined => table[name];
  const steps: Step[] = [{ label: arch }, { load: DATA_NR }];
  if (arch === "x86_64") steps.push({ jump: "ge", k: X32_SYSCALL_BIT, to: "kill" });
  for (const name of DENIED) {
    const number = nr(name);
    if (number !== undefined) steps.push({ jump: "eq", k: number, to: "eperm" });
  }
  const checked: Array<[SyscallName, string]> = [
    ["clone3", "enosys"],
    ["clone", "clone"],
    ["unshare", "unshare"],
    ["personality", "personality"],
    // openat2 passes its mode in memory, out of the filter's reach: libc falls back to openat.
    ["openat2", "enosys"],
    // io_uring: as on a kernel without it (libuv and liburing fall back to ordinary syscalls).
    ["io_uring_setup", "enosys"],
    ["io_uring_enter", "enosys"],
    ["io_uring_register", "enosys"],
    // The mode is argument 1, 2 or 3.
    ["chmod", "mode1"],
    ["fchmod", "mode1"],
    ["creat", "mode1"],
    ["mknod", "mode1"],
    ["open", "mode2"],
    ["fchmodat", "mode2"],
    ["fchmodat2", "mode2"],
    ["mknodat", "mode2"],
    ["openat", "mode3"],
  ];
  for (const [name, target] of checked) {
    const number = nr(name);
    if (number !== undefined) steps.push({ jump: "eq", k: number, to: target });
  }
  steps.push({ ret: SECCOMP_RET_ALLOW });
  return steps;
}

/** The filter's steps: dispatch on the architecture, then the per-architecture and shared checks. */
function filterSteps(): Step[] {
  const personality: Step[] = ALLOWED_PERSONALITIES.map((k) => ({ jump: "eq", k, to: "allow" }));
  return [
    { load: DATA_ARCH },
    { jump: "eq", k: AUDIT_ARCH_X86_64, to: "x86_64" },
    { jump: "eq", k: AUDIT_ARCH_AARCH64, to: "aarch64" },
    { ret: SECCOMP_RET_KILL_PROCESS },
    ...archSteps("x86_64"),
    ...archSteps("aarch64"),
    { label: "clone" },
    { load: dataArgLow(0) },
    { jump: "set", k: CLONE_NEW_FLAGS, to: "eperm", otherwise: "allow" },
    { label: "unshare" },
    { load: dataArgLow(0) },
    { jump: "set", k: UNSHARE_NEW_FLAGS, to: "eperm", otherwise: "allow" },
    ...[1, 2, 3].flatMap((arg): Step[] => [
      { label: `mode${arg}` },
      { load: dataArgLow(arg) },
      { jump: "set", k: SETID_BITS, to: "eperm", otherwise: "allow" },
    ]),
    // Falls through to "eperm" when no allowed value matched.
    { label: "personality" },
    { load: dataArgLow(0) },
    ...personality,
    { label: "eperm" },
    { ret: retErrno(EPERM) },
    { label: "allow" },
    { ret: SECCOMP_RET_ALLOW },
    { label: "enosys" },
    { ret: retErrno(ENOSYS) },
    { label: "kill" },
    { ret: SECCOMP_RET_KILL_PROCESS },
  ];
}

let compiled: Buffer | undefined;

/** The assembled filter (built once per process). */
export function seccompProgram(): Buffer {
  compiled ??= assemble(filterSteps());
  return compiled;
}
