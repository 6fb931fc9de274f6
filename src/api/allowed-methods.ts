/**
 * The methods the app serves at a path, read from its own route table: a request with another
 * method gets 405 and `Allow` instead of 404 (the path exists; the method does not).
 */

export interface RouteEntry {
  method: string;
  path: string;
}

/** True when the Hono route pattern (`/a/:id/b`, `/a/*`) matches `path`. */
function patternMatches(pattern: string, path: string): boolean {
  const wanted = pattern.split("/");
  const given = path.split("/");
  for (let index = 0; index < wanted.length; index++) {
    const part = wanted[index]!;
    if (part === "*") return true;
    const segment = given[index];
    if (segment === undefined) return false;
    if (part.startsWith(":") ? segment === "" : part !== segment) return false;
  }
  return wanted.length === given.length;
}

const methodsOf = (routes: readonly RouteEntry[]) =>
  [...new Set(routes.map((route) => route.method.toUpperCase()))].sort();

/** Handlers only: middleware is registered with method `ALL`. */
const handlers = (routes: readonly RouteEntry[]) => routes.filter((route) => route.method !== "ALL");

/**
 * Methods of the routes spelled exactly `path` (`/v1/sessions/import`). Such a path is that
 * route's alone: it is never read as a pattern route's parameter (`/v1/sessions/{sessionId}`).
 */
export function literalMethods(routes: readonly RouteEntry[], path: string): string[] {
  return methodsOf(handlers(routes).filter((route) => route.path === path));
}

/** Methods of the routes that match `path` (literal routes win), sorted. */
export function allowedMethods(routes: readonly RouteEntry[], path: string): string[] {
  const literal = literalMethods(routes, path);
  if (literal.length > 0) return literal;
  return methodsOf(handlers(routes).filter((route) => patternMatches(route.path, path)));
}

/** Whether `method` is one of `allowed` (HEAD is served wherever GET is). */
export function isAllowed(method: string, allowed: readonly string[]): boolean {
  return allowed.includes(method) || (method === "HEAD" && allowed.includes("GET"));
}
