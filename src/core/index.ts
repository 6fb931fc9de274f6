/**
 * Keel's pure core: message model, session format and tree, context building, sanitation,
 * session repair, tool-call registry, token estimation, compaction and branch-summary planning,
 * adapters for parts-message session files (tunacode session JSON), events and queues. No I/O, no
 * clock, no ambient randomness: safe to import from Temporal workflow code.
 */
export * from "./branch-summary";
export * from "./compaction";
export * from "./compaction-settings";
export * from "./events";
export * from "./failure-types";
export * from "./ids";
export * from "./llm-context";
export * from "./markers";
export * from "./messages";
export * from "./parts-messages";
export * from "./parts-session";
export * from "./queues";
export * from "./retry-policy";
export * from "./sanitize";
export * from "./session-codec";
export * from "./session-entries";
export * from "./session-ref";
export * from "./session-repair";
export * from "./session-tree";
export * from "./session-types";
export * from "./summary-prompts";
export * from "./tokens";
export * from "./tool-registry";
export * from "./usage";
