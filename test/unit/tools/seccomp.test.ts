/**
 * The seccomp filter's assembler and its decisions, evaluated by a small classic-BPF interpreter
 * over `struct seccomp_data` (so the aarch64 half is checked on any machine). The filter in a real
 * sandbox is attacked in sandbox.test.ts.
 */
import {
  assemble,
  BPF,
  ENOSYS,
  EPERM,
  retErrno,
  SECCOMP_RET_ALLOW,
  SECCOMP_RET_KILL_PROCESS,
  SYSCALLS,
  seccompProgram,
} from "../../../src/tools/seccomp";

const ARCH = { x86_64: 0xc000003e, aarch64: 0xc00000b7, i386: 0x40000003, arm: 0x40000028 };

/** Runs a filter on `struct seccomp_data` (nr, arch, ip, args[6]); supports the opcodes the filter uses. */
function evaluate(program: Buffer, arch: number, nr: number, args: number[] = []): number {
  const data = Buffer.alloc(64);
  data.writeInt32LE(nr | 0, 0);
  data.writeUInt32LE(arch, 4);
  for (const [i, arg] of args.entries()) data.writeBigUInt64LE(BigInt(arg), 16 + 8 * i);
  let acc = 0;
  for (let pc = 0; pc * 8 < program.length; pc++) {
    const code = program.readUInt16LE(pc * 8);
    const jt = program.readUInt8(pc * 8 + 2);
    const jf = program.readUInt8(pc * 8 + 3);
    const k = program.readUInt32LE(pc * 8 + 4);
    switch (code) {
      case BPF.LD_W_ABS:
        acc = data.readUInt32LE(k);
        break;
      case BPF.RET_K:
        return k;
      case BPF.JEQ_K:
        pc += acc === k ? jt : jf;
        break;
      case BPF.JGE_K:
        pc += acc >= k ? jt : jf;
        break;
      case BPF.JSET_K:
        pc += (acc & k) !== 0 ? jt : jf;
        break;
      default:
        throw new Error(`unsupported opcode ${code}`);
    }
  }
  throw new Error("fell off the end of the program");
}

const program = seccompProgram();
const EPERM_RET = retErrno(EPERM);

describe("assemble", () => {
  test("encodes sock_filter records and resolves forward labels", () => {
    const bytes = assemble([
      { load: 4 },
      { jump: "eq", k: 7, to: "yes" },
      { ret: 1 },
      { label: "yes" },
      { ret: 2 },
    ]);
    expect(bytes.toString("hex")).toBe(
      ["2000000004000000", "1500010007000000", "0600000001000000", "0600000002000000"].join(""),
    );
  });

  test("refuses unknown and backward labels and jumps beyond 255", () => {
    expect(() => assemble([{ jump: "eq", k: 0, to: "nowhere" }, { ret: 0 }])).toThrow(/unknown label/);
    expect(() => assemble([{ label: "back" }, { ret: 0 }, { jump: "eq", k: 0, to: "back" }])).toThrow(
      /out of range/,
    );
    const far = [
      { jump: "eq" as const, k: 0, to: "end" },
      ...Array.from({ length: 256 }, () => ({ ret: 0 })),
      { label: "end" },
      { ret: 1 },
    ];
    expect(() => assemble(far)).toThrow(/out of range/);
  });
});

describe("the tool-process filter", () => {
  test.each(["x86_64", "aarch64"] as const)("%s: denied syscalls get EPERM, others pass", (arch) => {
    const table = SYSCALLS[arch];
    for (const name of ["ptrace", "mount", "setns", "keyctl", "bpf", "init_module", "kexec_load"] as const) {
      expect(evaluate(program, ARCH[arch], table[name] ?? -1)).toBe(EPERM_RET);
    }
    const read = arch === "x86_64" ? 0 : 63;
    const execve = arch === "x86_64" ? 59 : 221;
    expect(evaluate(program, ARCH[arch], read)).toBe(SECCOMP_RET_ALLOW);
    expect(evaluate(program, ARCH[arch], execve)).toBe(SECCOMP_RET_ALLOW);
  });

  test.each(["x86_64", "aarch64"] as const)(
    "%s: clone and unshare are checked for namespace flags",
    (arch) => {
      const { clone, unshare, clone3 } = SYSCALLS[arch];
      const SIGCHLD = 17;
      const CLONE_THREAD_FLAGS = 0x3d0f00; // what pthread_create passes
      expect(evaluate(program, ARCH[arch], clone ?? -1, [SIGCHLD])).toBe(SECCOMP_RET_ALLOW);
      expect(evaluate(program, ARCH[arch], clone ?? -1, [CLONE_THREAD_FLAGS])).toBe(SECCOMP_RET_ALLOW);
      for (const flag of [0x20000, 0x2000000, 0x4000000, 0x8000000, 0x10000000, 0x20000000, 0x40000000]) {
        expect(evaluate(program, ARCH[arch], clone ?? -1, [flag | SIGCHLD])).toBe(EPERM_RET);
        expect(evaluate(program, ARCH[arch], unshare ?? -1, [flag])).toBe(EPERM_RET);
      }
      expect(evaluate(program, ARCH[arch], unshare ?? -1, [0x80])).toBe(EPERM_RET); // CLONE_NEWTIME
      expect(evaluate(program, ARCH[arch], unshare ?? -1, [0x400])).toBe(SECCOMP_RET_ALLOW); // CLONE_FILES
      expect(evaluate(program, ARCH[arch], clone3 ?? -1)).toBe(retErrno(ENOSYS));
    },
  );

  test("personality: only the default, PER_LINUX32 and the query", () => {
    const { personality } = SYSCALLS.x86_64;
    for (const allowed of [0, 8, 0xffffffff])
      expect(evaluate(program, ARCH.x86_64, personality ?? -1, [allowed])).toBe(SECCOMP_RET_ALLOW);
    const ADDR_NO_RANDOMIZE = 0x40000;
    expect(evaluate(program, ARCH.x86_64, personality ?? -1, [ADDR_NO_RANDOMIZE])).toBe(EPERM_RET);
  });

  test.each(["x86_64", "aarch64"] as const)(
    "%s: no mode a file is created or changed with may carry setuid or setgid bits",
    (arch) => {
      const table = SYSCALLS[arch];
      // [syscall, index of its mode argument]
      const calls: Array<[keyof typeof table, number]> = [
        ["chmod", 1],
        ["fchmod", 1],
        ["creat", 1],
        ["mknod", 1],
        ["open", 2],
        ["fchmodat", 2],
        ["fchmodat2", 2],
        ["mknodat", 2],
        ["openat", 3],
      ];
      for (const [name, index] of calls) {
        const nr = table[name];
        if (nr === undefined) continue;
        const args = (mode: number) => Array.from({ length: 4 }, (_, i) => (i === index ? mode : 0));
        expect([name, evaluate(program, ARCH[arch], nr, args(0o755))]).toEqual([name, SECCOMP_RET_ALLOW]);
        expect([name, evaluate(program, ARCH[arch], nr, args(0o4755))]).toEqual([name, EPERM_RET]);
        expect([name, evaluate(program, ARCH[arch], nr, args(0o2755))]).toEqual([name, EPERM_RET]);
        expect([name, evaluate(program, ARCH[arch], nr, args(0o1777))]).toEqual([name, SECCOMP_RET_ALLOW]);
      }
      expect(evaluate(program, ARCH[arch], table.openat2 ?? -1)).toBe(retErrno(ENOSYS));
    },
  );

  test.each(["x86_64", "aarch64"] as const)("%s: io_uring fails with ENOSYS", (arch) => {
    const table = SYSCALLS[arch];
    for (const name of ["io_uring_setup", "io_uring_enter", "io_uring_register"] as const) {
      expect([name, evaluate(program, ARCH[arch], table[name] ?? -1)]).toEqual([name, retErrno(ENOSYS)]);
    }
  });

  test("other architectures and the x32 ABI are killed", () => {
    expect(evaluate(program, ARCH.i386, 20)).toBe(SECCOMP_RET_KILL_PROCESS);
    expect(evaluate(program, ARCH.arm, 20)).toBe(SECCOMP_RET_KILL_PROCESS);
    expect(evaluate(program, ARCH.x86_64, 0x40000000 + 39)).toBe(SECCOMP_RET_KILL_PROCESS);
  });
});
