/**
 * The structured logger of every Keel process (worker, API): one JSON object per line on stdout,
 * always with the fields `time`, `level`, `msg` and `component`, then the caller's fields.
 * Values under keys that name a secret (apiKey, authorization, token, secret, password, …) are
 * replaced with "[redacted]" at any depth, so a config or header object logged by mistake does not
 * leak credentials.
 */

export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;

/** Writes one log line. */
export type Logger = (level: LogLevel, msg: string, fields?: LogFields) => void;

export const REDACTED = "[redacted]";

/**
 * Keys whose values are secrets: the key, lower-cased with `-` and `_` removed, ends with one of
 * these words (so `api_key`, `x-api-key`, `slackSigningSecret` and `accessToken` are caught, while
 * `totalTokens` or `maxTokens`, which are counts, are not).
 */
const SECRET_KEY =
  /(apikey|authorization|token|secret|password|passwd|credentials?|cookie|signature|privatekey)$/;

function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key.toLowerCase().replace(/[-_]/g, ""));
}

/** JSON replacer: secrets redacted by key, errors by name and message, bigints as strings. */
function logValue(key: string, value: unknown): unknown {
  if (key !== "" && isSecretKey(key) && value !== undefined && value !== null) return REDACTED;
  if (value instanceof Error) return { name: value.name, message: value.message };
  return typeof value === "bigint" ? value.toString() : value;
}

/** The JSON line (without newline) of one log record. The four fixed fields win over the caller's. */
export function formatLogLine(
  component: string,
  level: LogLevel,
  msg: string,
  fields: LogFields = {},
): string {
  const record: LogFields = { time: new Date().toISOString(), level, msg, component };
  for (const [key, value] of Object.entries(fields)) if (!(key in record)) record[key] = value;
  return JSON.stringify(record, logValue);
}

/** A logger for `component` writing lines to `write` (stdout by default). */
export function createLogger(
  component: string,
  write: (line: string) => void = (line) => process.stdout.write(line),
): Logger {
  return (level, msg, fields) => write(`${formatLogLine(component, level, msg, fields)}\n`);
}

const LEVELS: readonly string[] = ["debug", "info", "warn", "error"] satisfies LogLevel[];

/**
 * The logger as a function of one record (`{level, msg, ...fields}`), the form the API's
 * middleware and routes log with. A missing or unknown level is logged as "info".
 */
export function recordLogger(logger: Logger): (record: LogFields) => void {
  return ({ level, msg, ...fields }) =>
    logger(LEVELS.includes(String(level)) ? (level as LogLevel) : "info", String(msg ?? ""), fields);
}
