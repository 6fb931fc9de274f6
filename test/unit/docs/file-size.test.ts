/**
 * Files in `src/` stay small: one over 400 lines says why at its top (a line starting
 * `// Over 400 lines:` or a JSDoc line `Over 400 lines:` in its first three lines).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";

const ROOT = join(__dirname, "../../..");
const MAX_LINES = 400;

function sourceFiles(dir = "src"): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(posix.join(dir, entry.name))
      : entry.name.endsWith(".ts")
        ? [posix.join(dir, entry.name)]
        : [],
  );
}

test(`every src/ file over ${MAX_LINES} lines says why at its top`, () => {
  const unexplained = sourceFiles().filter((file) => {
    const lines = readFileSync(join(ROOT, file), "utf8").split("\n");
    return lines.length > MAX_LINES + 1 && !lines.slice(0, 3).some((line) => /Over 400 lines:/.test(line));
  });
  expect(unexplained).toEqual([]);
});
