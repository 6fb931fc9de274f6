/**
 * Where a process spent its CPU: reads V8 CPU profiles (`.cpuprofile`, as `--cpu-prof` writes
 * them; `BENCH_PROFILE_DIR` makes the benchmarks' worker processes write one) and prints the
 * self time by package (or project folder) and the functions with the most self time.
 *
 * Run: npx tsx bench/profile-summary.ts <file.cpuprofile> [top=40]
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** "@aws-sdk/client-s3", "src/activities", "node:internal", "(program)", … for a frame's URL. */
function owner(url: string, functionName: string): string {
  if (!url) return `(${functionName || "native"})`;
  const modules = url.lastIndexOf("node_modules/");
  if (modules >= 0) {
    const parts = url.slice(modules + "node_modules/".length).split("/");
    return parts[0]?.startsWith("@") ? `${parts[0]}/${parts[1]}` : (parts[0] ?? url);
  }
  if (url.startsWith("node:")) return url.split("/").slice(0, 2).join("/");
  const src = url.indexOf("/src/");
  if (src >= 0)
    return url
      .slice(src + 1)
      .split("/")
      .slice(0, 2)
      .join("/");
  return url.replace(/^file:\/\//, "");
}

function percentRows(totals: Map<string, number>, all: number, top: number): string[] {
  return [...totals.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(
      ([name, us]) =>
        `${((100 * us) / all).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(7)} ms  ${name}`,
    );
}

function main(): void {
  const [file, topArg] = process.argv.slice(2);
  if (!file) throw new Error("usage: npx tsx bench/profile-summary.ts <file.cpuprofile> [top]");
  const top = Number(topArg ?? 40);
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, index) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0));
  });
  const byOwner = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let all = 0;
  let idle = 0;
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)?.callFrame;
    if (!frame) continue;
    if (frame.functionName === "(idle)") {
      idle += us;
      continue;
    }
    all += us;
    const who = owner(frame.url, frame.functionName);
    byOwner.set(who, (byOwner.get(who) ?? 0) + us);
    const name = `${frame.functionName || "(anonymous)"} ${who}:${frame.lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
  }
  process.stdout.write(
    `${file}\nbusy ${(all / 1000).toFixed(0)} ms, idle ${(idle / 1000).toFixed(0)} ms\n\nself time by owner:\n`,
  );
  process.stdout.write(`${percentRows(byOwner, all, top).join("\n")}\n\nself time by function:\n`);
  process.stdout.write(`${percentRows(byFunction, all, top).join("\n")}\n`);
  process.stdout.write(`\ntotal time (self and callees) by function of ${ownFiles}:\n`);
  process.stdout.write(`${percentRows(inclusiveOwnTime(profile, selfUs), all, top).join("\n")}\n`);
}

/** Files whose functions get a total-time table: the project's own code (sources or a bundle of them). */
const ownFiles = /\/src\/|bench-build|keel-workflows/;

/** Time spent in each project function and everything it called (recursion counted once). */
function inclusiveOwnTime(profile: CpuProfile, selfUs: Map<number, number>): Map<string, number> {
  const parent = new Map<number, ProfileNode>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node);
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const totals = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const seen = new Set<string>();
    for (let node = byId.get(id); node; node = parent.get(node.id)) {
      const { functionName, url, lineNumber } = node.callFrame;
      if (functionName === "(idle)") break;
      if (!ownFiles.test(url)) continue;
      const name = `${functionName || "(anonymous)"} ${owner(url, functionName)}:${lineNumber + 1}`;
      if (seen.has(name)) continue;
      seen.add(name);
      totals.set(name, (totals.get(name) ?? 0) + us);
    }
  }
  return totals;
}

main();
