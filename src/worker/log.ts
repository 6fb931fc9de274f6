/** Structured JSON log lines on stdout; callers pass only non-secret fields. */
export function log(
  level: "info" | "warn" | "error",
  message: string,
  fields: Record<string, unknown>,
): void {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), level, message, ...fields })}\n`);
}
