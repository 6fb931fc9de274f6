/** Benchmark results: the machine they were measured on and the committed markdown / JSON files. */
import { writeFileSync } from "node:fs";
import { availableParallelism, cpus, totalmem } from "node:os";
import { join } from "node:path";
import { projectRoot } from "./stack";

export interface MachineInfo {
  date: string;
  nproc: number;
  cpu: string;
  memoryGb: number;
  node: string;
}

export function machineInfo(): MachineInfo {
  return {
    date: new Date().toISOString(),
    nproc: availableParallelism(),
    cpu: cpus()[0]?.model ?? "unknown",
    memoryGb: Math.round(totalmem() / 1024 ** 3),
    node: process.version,
  };
}

export function machineLine(machine: MachineInfo): string {
  return `Measured ${machine.date} on ${machine.nproc} CPUs (${machine.cpu}), ${machine.memoryGb} GB RAM, Node ${machine.node}.`;
}

/** Writes `bench/results/<name>.md` and `<name>.json`; returns the markdown path. */
export function writeResults(name: string, markdown: string, data: unknown): string {
  const base = join(projectRoot, "bench/results", name);
  writeFileSync(`${base}.md`, markdown.endsWith("\n") ? markdown : `${markdown}\n`);
  writeFileSync(`${base}.json`, `${JSON.stringify(data, null, 2)}\n`);
  return `${base}.md`;
}

/** A markdown table from a header row and rows of cells. */
export function table(header: string[], rows: Array<Array<string | number>>, align?: string[]): string {
  const line = (cells: Array<string | number>) => `| ${cells.join(" | ")} |`;
  const separators = header.map((_, index) => align?.[index] ?? "---:");
  return [line(header), line(separators), ...rows.map(line)].join("\n");
}

export const fixed = (value: number, digits = 1) => value.toFixed(digits);
export const ratio = (value: number) => `${value.toFixed(2)}×`;
export const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

/** Reads a positive integer from the environment, else the default. */
export function intFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0)
    throw new Error(`${name} must be a positive integer, got ${raw}`);
  return value;
}

/** Reads a comma-separated list of positive integers from the environment, else the default. */
export function intListFromEnv(name: string, fallback: number[]): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const values = raw.split(",").map((part) => Number(part.trim()));
  if (values.some((value) => !Number.isInteger(value) || value <= 0)) {
    throw new Error(`${name} must be a comma-separated list of positive integers, got ${raw}`);
  }
  return values;
}

/** Runs a benchmark's `main` and exits: 0 when it finished, 1 (with the error) when it failed. */
export function runBenchmark(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
