/**
 * Zod issues as the problems a refusal lists. A union that no branch accepts is one issue,
 * "Invalid input", holding every branch's own issues: that hides what is wrong with the branch the
 * request meant (an MCP server with `command` is a stdio server; its unlisted secret is the
 * problem, not the missing `url` of the HTTP branch). The branch that got furthest is reported
 * instead: the one whose shallowest issue is deepest (its shape matched, a value inside did
 * not), then the one with fewest issues; when branches tie, the union's own issue stands.
 */
import type { z } from "@hono/zod-openapi";

type Issue = z.core.$ZodIssue;
type Path = readonly PropertyKey[];

/** A problem of a refusal: where (`a.0.b`, "" for the body itself) and what. */
export interface ReportedIssue {
  path: string;
  message: string;
}

/** The problems `issues` stand for, unions resolved to the branch that got furthest (see above). */
export function reportedIssues(issues: readonly Issue[]): ReportedIssue[] {
  return resolve(issues, []).map(({ path, message }) => ({ path: path.map(String).join("."), message }));
}

function resolve(issues: readonly Issue[], base: Path): { path: Path; message: string }[] {
  return issues.flatMap((issue) => {
    const path = [...base, ...issue.path];
    if (issue.code === "invalid_union" && issue.errors.length > 0) {
      const branch = furthestBranch(issue.errors.map((errors) => resolve(errors, path)));
      if (branch) return branch;
    }
    return [{ path, message: issue.message }];
  });
}

/** The one branch that got furthest, or undefined when none stands out. */
function furthestBranch<T extends { path: Path }>(branches: T[][]): T[] | undefined {
  const rank = (branch: T[]) => ({
    depth: Math.min(...branch.map((issue) => issue.path.length)),
    count: branch.length,
  });
  const ranked = branches
    .filter((branch) => branch.length > 0)
    .map((branch) => ({ branch, ...rank(branch) }))
    .sort((a, b) => b.depth - a.depth || a.count - b.count);
  const [best, next] = ranked;
  if (!best || (next && next.depth === best.depth && next.count === best.count)) return undefined;
  return best.branch;
}
