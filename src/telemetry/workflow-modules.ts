/**
 * Where a traced workflow bundle's interceptors are, for the bundlers (`bundle-workflows.ts
 * --traced`, `keel dev --traces`, a worker that bundles its workflows at start). Its own module:
 * a `require.resolve` of a source file cannot be bundled, so the code of a bundled worker (the
 * Lambda function) must not import it.
 */

/** The workflow interceptor modules a traced workflow bundle includes. */
export function workflowInterceptorModules(): string[] {
  return [require.resolve("./workflow-interceptors")];
}
