/** S3 session store: key layout, immutable-object cache and the store itself. */
export * from "./entry-cache";
export * from "./s3-config";
export * from "./session-errors";
export * from "./session-keys";
export * from "./session-store";
