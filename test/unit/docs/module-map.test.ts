/**
 * docs/architecture.md's module map against the tree: every file under `src/` is named there, and
 * every file named there exists. A row whose first cell names a directory (`src/x/`) lists files
 * relative to it in its second cell; any other row names its files in its first cell (full paths,
 * or names beside the first one in the same directory).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, posix } from "node:path";

const ROOT = join(__dirname, "../../..");
const FILE_NAME = /^[\w./-]+\.(ts|mjs|json)$/;

function moduleMapRows(): string[][] {
  const doc = readFileSync(join(ROOT, "docs/architecture.md"), "utf8");
  const section = doc.split(/^## Module map$/m)[1]?.split(/^## /m)[0] ?? "";
  return section
    .split("\n")
    .filter((line) => line.startsWith("| `"))
    .map((line) => line.split(" | ").map((cell) => cell.replace(/^\| |\|$/g, "")));
}

const codeSpans = (cell: string | undefined) =>
  [...(cell ?? "").matchAll(/`([^`]+)`/g)].map((match) => match[1] as string);

/** Every file the module map names, as a path from the repository root. */
function namedFiles(): string[] {
  return moduleMapRows().flatMap(([first, second]) => {
    const [head] = codeSpans(first);
    if (head === undefined) return [];
    if (head.endsWith("/"))
      return codeSpans(second)
        .filter((name) => FILE_NAME.test(name))
        .map((name) => head + name);
    const base = dirname(head);
    return codeSpans(first)
      .flatMap((name) => name.split(/,\s*/))
      .filter((name) => FILE_NAME.test(name))
      .map((name) => (name.startsWith("src/") ? name : posix.join(base, name)));
  });
}

function sourceFiles(dir = "src"): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(posix.join(dir, entry.name)) : [posix.join(dir, entry.name)],
  );
}

test("every file under src/ is in docs/architecture.md's module map", () => {
  const named = new Set(namedFiles());
  expect(sourceFiles().filter((file) => !named.has(file))).toEqual([]);
});

test("every file the module map names exists", () => {
  expect(namedFiles().filter((file) => !existsSync(join(ROOT, file)))).toEqual([]);
});
