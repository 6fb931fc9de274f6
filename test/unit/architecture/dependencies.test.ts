/**
 * Dependencies point down (docs/architecture.md, "Dependencies"): each folder of src/ sits on one
 * layer, and a file imports only files of its own folder or of a layer below (type-only imports
 * and re-exports included: they tie the modules as much). A new folder must be given its layer.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

const SRC = resolve(__dirname, "../../../src");

/** Bottom to top; folders of one layer do not import each other. */
const LAYERS: readonly (readonly string[])[] = [
  ["core", "logging", "net"],
  ["vault"],
  ["tools"],
  ["providers", "viewer"],
  ["mcp", "telemetry"],
  ["store"],
  ["contracts"],
  ["workflows"],
  ["integrations"],
  ["tenants", "evals"],
  ["tool-calls"],
  ["environments"],
  ["run-client"],
  ["activities"],
  ["worker"],
  ["api"],
  ["api-client"],
  ["runner"],
  ["cli"],
];

const layerOf = new Map(
  LAYERS.flatMap((folders, layer) => folders.map((folder) => [folder, layer] as const)),
);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** The folder of src/ a file is in (`file`: absolute, or relative to src/). */
const folderOf = (file: string) => (file.startsWith("/") ? relative(SRC, file) : file).split("/")[0] ?? "";

/** Every import of the tree that leaves its folder: `from` imports `to` (both relative to src/). */
function crossFolderImports(): { from: string; to: string }[] {
  return sourceFiles(SRC).flatMap((file) =>
    ts
      .preProcessFile(readFileSync(file, "utf8"), true, true)
      .importedFiles.map((imported) => imported.fileName)
      .filter((name) => name.startsWith("."))
      .map((name) => resolve(dirname(file), name))
      .filter((target) => target.startsWith(`${SRC}/`) && folderOf(target) !== folderOf(file))
      .map((target) => ({ from: relative(SRC, file), to: relative(SRC, target) })),
  );
}

test("every folder of src/ has a layer", () => {
  const folders = readdirSync(SRC, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name);
  expect(folders.filter((folder) => !layerOf.has(folder))).toEqual([]);
});

test("no import runs up a layer or across one", () => {
  const upward = crossFolderImports().filter(
    ({ from, to }) =>
      (layerOf.get(folderOf(from)) ?? -1) <= (layerOf.get(folderOf(to)) ?? Number.MAX_SAFE_INTEGER),
  );
  expect(upward.map(({ from, to }) => `${from} -> ${to}`)).toEqual([]);
});

test("the check sees imports: type-only ones and re-exports too", () => {
  const imports = crossFolderImports();
  // Known, downward ones of each form, so a parser that sees nothing cannot pass the test above.
  expect(imports).toContainEqual({ from: "workflows/run/state.ts", to: "contracts/activities" });
  expect(imports.length).toBeGreaterThan(300);
});

/** Every import of the tree (within a folder too): file → imported file, both relative to src/. */
function fileImports(): Map<string, string[]> {
  const resolveFile = (target: string) =>
    [`${target}.ts`, `${target}/index.ts`, target].find(
      (candidate) => existsSync(candidate) && candidate.endsWith(".ts"),
    );
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const targets = ts
      .preProcessFile(readFileSync(file, "utf8"), true, true)
      .importedFiles.map((imported) => imported.fileName)
      .filter((name) => name.startsWith("."))
      .flatMap((name) => resolveFile(resolve(dirname(file), name)) ?? [])
      .map((target) => relative(SRC, target));
    graph.set(relative(SRC, file), targets);
  }
  return graph;
}

/** The strongly connected groups of more than one file (Tarjan): each is a circle of imports. */
function circles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (file: string) => {
    index.set(file, next);
    low.set(file, next);
    next++;
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file) ?? 0, low.get(target) ?? 0));
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file) ?? 0, index.get(target) ?? 0));
    }
    if (low.get(file) === index.get(file)) {
      const group: string[] = [];
      let member: string | undefined;
      do {
        member = stack.pop();
        if (member === undefined) break;
        onStack.delete(member);
        group.push(member);
      } while (member !== file);
      if (group.length > 1) found.push(group.sort());
    }
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

test("no circle of imports between files, within a folder either", () => {
  expect(circles(fileImports())).toEqual([]);
});

test("the circle check finds a circle", () => {
  const graph = new Map([
    ["a.ts", ["b.ts"]],
    ["b.ts", ["c.ts"]],
    ["c.ts", ["a.ts"]],
    ["d.ts", ["a.ts"]],
  ]);
  expect(circles(graph)).toEqual([["a.ts", "b.ts", "c.ts"]]);
  // The real tree's graph holds its imports.
  expect(fileImports().get("api/app.ts")).toContain("api/route-context.ts");
});
