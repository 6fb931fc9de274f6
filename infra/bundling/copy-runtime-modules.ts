/**
 * Copies the `@temporalio/*` packages a Lambda worker loads at run time, and everything they
 * depend on, from the repository's node_modules into a function package — offline, no install.
 * Only the native core for the target platform is kept, and nothing used solely to bundle
 * workflow code at run time (the package ships a prebuilt bundle).
 *
 * Usage: `tsx infra/bundling/copy-runtime-modules.ts <output dir> <core target>`, e.g.
 * `aarch64-unknown-linux-gnu`.
 */
import { cpSync, existsSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";

const REPO_ROOT = resolve(__dirname, "../..");
const ROOTS = [
  "@temporalio/lambda-worker",
  "@temporalio/worker",
  "@temporalio/activity",
  "@temporalio/client",
  // Live events: the activities publish to a run's stream through its client.
  "@temporalio/workflow-streams",
  // Large payloads go to S3 (the data converter, src/store/payload-storage.ts).
  "@temporalio/external-storage-s3",
  "@temporalio/external-storage-s3-aws-sdk",
  // The tracing interceptors (activities, workflow span export) of a worker with KEEL_OTEL_ENDPOINT.
  "@temporalio/interceptors-opentelemetry",
];
/** Build-time only: SWC compiles workflow code when bundling, which the prebuilt bundle replaces. */
const SKIPPED_PACKAGES = /^@swc\//;
const CORE_BRIDGE = "@temporalio/core-bridge";
/** Native-core sources and build files: only `releases/<target>` is needed at run time. */
const CORE_BRIDGE_SKIPPED = new Set([
  "sdk-core",
  "src",
  "bridge-macros",
  "scripts",
  "Cargo.toml",
  "Cargo.lock",
  "ts",
]);

interface PackageJson {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

/** The directory of `name` as Node would resolve it from `fromDir` (walking up node_modules). */
function packageDir(name: string, fromDir: string): string | undefined {
  let dir = fromDir;
  for (;;) {
    const candidate = join(dir, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return candidate;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** Every package directory reachable from `ROOTS` through dependencies. */
export function runtimeClosure(): string[] {
  const seen = new Set<string>();
  const pending = ROOTS.map((name) => ({ name, from: REPO_ROOT, optional: false }));
  while (pending.length > 0) {
    const next = pending.pop()!;
    if (SKIPPED_PACKAGES.test(next.name)) continue;
    const dir = packageDir(next.name, next.from);
    if (!dir) {
      if (next.optional) continue;
      throw new Error(`${next.name} is not installed (needed from ${relative(REPO_ROOT, next.from) || "."})`);
    }
    if (seen.has(dir)) continue;
    seen.add(dir);
    const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as PackageJson;
    for (const name of Object.keys(manifest.dependencies ?? {}))
      pending.push({ name, from: dir, optional: false });
    for (const name of Object.keys(manifest.optionalDependencies ?? {}))
      pending.push({ name, from: dir, optional: true });
  }
  return [...seen].sort();
}

function copyPackage(dir: string, outputDir: string, coreTarget: string): void {
  const destination = join(outputDir, relative(REPO_ROOT, dir));
  const isCoreBridge = dir.endsWith(`${sep}${CORE_BRIDGE.replace("/", sep)}`);
  cpSync(dir, destination, {
    recursive: true,
    dereference: true,
    filter: (source) => {
      const inside = relative(dir, source).split(sep);
      if (inside[0] === "node_modules") return false; // nested packages are copied on their own
      if (!isCoreBridge) return true;
      if (CORE_BRIDGE_SKIPPED.has(inside[0] ?? "")) return false;
      return !(inside[0] === "releases" && inside[1] !== undefined && inside[1] !== coreTarget);
    },
  });
}

function main([outputDir, coreTarget]: string[]): void {
  if (!outputDir || !coreTarget) throw new Error("usage: copy-runtime-modules.ts <output dir> <core target>");
  const closure = runtimeClosure();
  const coreBridge = closure.find((dir) => dir.endsWith(CORE_BRIDGE.replace("/", sep)));
  if (!coreBridge || !existsSync(join(coreBridge, "releases", coreTarget, "index.node"))) {
    throw new Error(`no prebuilt Temporal core for ${coreTarget} in ${CORE_BRIDGE}`);
  }
  for (const dir of closure) copyPackage(dir, outputDir, coreTarget);
}

if (require.main === module) {
  try {
    main(process.argv.slice(2));
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  }
}
