/**
 * An MCP stdio transport for a server started from a prepared command line (tools/sandbox.ts): the
 * SDK's own StdioClientTransport cannot hand bwrap its arguments and seccomp program on file
 * descriptors 3 and 4. The server leads its own process group; closing the transport ends the
 * whole group (and bwrap's `--die-with-parent` ends it with the worker).
 */
import { type ChildProcess, spawn } from "node:child_process";
import type { Writable } from "node:stream";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { terminateGroup } from "../tools/process-group";
import type { CommandLine } from "../tools/sandbox";

/** What is kept of a server's stderr, for the message when it fails (its tail). */
const STDERR_TAIL_CHARS = 2_000;

export class CommandLineTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private child?: ChildProcess;
  private readonly buffer = new ReadBuffer();
  private stderr = "";

  constructor(private readonly line: CommandLine) {}

  /** The end of what the server wrote to stderr (for error messages). */
  stderrTail(): string {
    return this.stderr.trim();
  }

  async start(): Promise<void> {
    const inputs = this.line.inputs ?? [];
    const child = spawn(this.line.file, this.line.args, {
      cwd: this.line.cwd,
      env: this.line.env,
      detached: true,
      stdio: ["pipe", "pipe", "pipe", ...inputs.map(() => "pipe" as const)],
    });
    this.child = child;
    inputs.forEach((data, i) => {
      const input = child.stdio[3 + i] as Writable;
      input.on("error", () => {});
      input.end(data);
    });
    child.stdin?.on("error", (error) => this.onerror?.(error));
    child.stdout?.on("data", (chunk: Buffer) => {
      this.buffer.append(chunk);
      for (;;) {
        let message: JSONRPCMessage | null;
        try {
          message = this.buffer.readMessage();
        } catch (error) {
          this.onerror?.(error as Error);
          continue;
        }
        if (!message) break;
        this.onmessage?.(message);
      }
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-STDERR_TAIL_CHARS);
    });
    await new Promise<void>((started, failed) => {
      child.once("spawn", () => started());
      child.once("error", failed);
    });
    child.once("exit", () => {
      this.child = undefined;
      this.onclose?.();
    });
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin) throw new Error("the MCP server is not running");
    await new Promise<void>((done) => {
      if (stdin.write(serializeMessage(message))) done();
      else stdin.once("drain", done);
    });
  }

  async close(): Promise<void> {
    const child = this.child;
    if (child?.pid === undefined) return;
    const exited = new Promise<void>((done) => child.once("exit", () => done()));
    await terminateGroup(child.pid);
    await exited;
  }
}
