/**
 * A server span per API request (HTTP semantic conventions), continuing the caller's trace when
 * the request carries a W3C `traceparent`. Everything the request does (starting or signalling a
 * run through the Temporal client) runs inside it, so the run's trace starts at the request that
 * started or steered it.
 */
import { context, propagation, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import type { MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import { keelTracer } from "./instrumentation";

/** The middleware; install it only when telemetry is on (see `instrumentation()`). */
export function traceRequests(): MiddlewareHandler {
  return async (c, next) => {
    const parent = propagation.extract(context.active(), Object.fromEntries(c.req.raw.headers));
    const method = c.req.method;
    await keelTracer().startActiveSpan(
      method,
      {
        kind: SpanKind.SERVER,
        attributes: { "http.request.method": method, "url.path": c.req.path },
      },
      parent,
      async (span) => {
        try {
          await next();
          // The route the request matched (its template, not the path: ids stay out of span names).
          const route = matchedRoutes(c).findLast((matched) => matched.method !== "ALL")?.path;
          if (route) {
            span.updateName(`${method} ${route}`);
            span.setAttribute("http.route", route);
          }
          span.setAttribute("http.response.status_code", c.res.status);
          if (c.res.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        } catch (error) {
          span.recordException(error as Error);
          span.setStatus({ code: SpanStatusCode.ERROR });
          throw error;
        } finally {
          span.end();
        }
      },
    );
  };
}
