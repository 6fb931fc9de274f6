/**
 * How the API and the worker reach Temporal: the environment variables both read, their defaults,
 * and the connection options they open a connection with. One definition, so the two processes of
 * one deployment cannot read the same variables differently.
 */
import { z } from "zod";
import type { SettingsShape } from "./env-settings";

export const DEFAULT_TEMPORAL_NAMESPACE = "default";

/** KEEL_TEMPORAL_* and KEEL_TASK_QUEUE, as fields of a process's environment schema. */
export const TEMPORAL_ENV = {
  KEEL_TEMPORAL_ADDRESS: z.string().default("127.0.0.1:7233").describe("The Temporal frontend, host:port."),
  KEEL_TEMPORAL_NAMESPACE: z
    .string()
    .default(DEFAULT_TEMPORAL_NAMESPACE)
    .describe("The Temporal namespace runs live in."),
  KEEL_TEMPORAL_API_KEY: z
    .string()
    .optional()
    .describe("A Temporal Cloud API key (secret); TLS is used when it is set."),
  KEEL_TASK_QUEUE: z
    .string()
    .min(1)
    .default("keel")
    .describe("The task queue of runs and their activities (environments' calls have queues of their own)."),
} satisfies SettingsShape;

type TemporalEnv = z.infer<z.ZodObject<typeof TEMPORAL_ENV>>;

export interface TemporalSettings {
  address: string;
  namespace: string;
  /** Temporal Cloud API key; TLS is used when it is set. */
  apiKey?: string;
}

/** The connection settings in parsed `TEMPORAL_ENV` values. */
export function temporalSettings(values: TemporalEnv): TemporalSettings {
  return {
    address: values.KEEL_TEMPORAL_ADDRESS,
    namespace: values.KEEL_TEMPORAL_NAMESPACE,
    apiKey: values.KEEL_TEMPORAL_API_KEY,
  };
}

/** Options of `Connection.connect` / `NativeConnection.connect`: TLS exactly when an API key is set. */
export function temporalConnectOptions(settings: TemporalSettings): {
  address: string;
  tls?: true;
  apiKey?: string;
} {
  return {
    address: settings.address,
    ...(settings.apiKey ? { tls: true as const, apiKey: settings.apiKey } : {}),
  };
}
