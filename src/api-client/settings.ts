/** The variables of the API's clients: the `keel` command and runners. */
import { z } from "zod";
import type { SettingsShape } from "../core/env-settings";

export const DEFAULT_API_URL = "http://127.0.0.1:8787";

/** Where the API is and which key a `keel` command sends (its --url and --key win). */
export const CLIENT_ENV = {
  KEEL_API_URL: z
    .string()
    .optional()
    .describe(`The API's base URL (default ${DEFAULT_API_URL}); --url wins.`),
  KEEL_API_KEY: z
    .string()
    .optional()
    .describe("The tenant's API key (secret) a keel command sends; --key wins."),
  KEEL_ADMIN_KEY: z.string().optional().describe("The operator's key (secret) keel admin sends; --key wins."),
} satisfies SettingsShape;
