/**
 * Request and response schemas of the HTTP API. The same zod schemas validate requests and
 * generate the OpenAPI document (`GET /v1/openapi.json`); shapes the core already defines (usage,
 * statuses, delivery modes, policy actions) are taken from it, not restated.
 */
export * from "./agents";
export * from "./budget";
export * from "./message-body";
export * from "./params";
export * from "./problem";
export * from "./replay";
export * from "./runs";
export * from "./session-tree";
export * from "./sessions";
