/** The providers' variables, as fields of the API's and the worker's settings schemas. */
import { z } from "zod";
import type { SettingsShape } from "../core/env-settings";

/** Where model calls go and which keys they carry (read by the API for its checks, by the worker for the calls). */
export const PROVIDER_ENV = {
  OPENAI_API_KEY: z.string().optional().describe("The key of OpenAI-API models (secret)."),
  OPENAI_BASE_URL: z
    .string()
    .optional()
    .describe("A base URL for OpenAI-API models (a proxy, a compatible server)."),
  ANTHROPIC_API_KEY: z.string().optional().describe("The key of Anthropic-API models (secret)."),
  ANTHROPIC_BASE_URL: z.string().optional().describe("A base URL for Anthropic-API models."),
  KEEL_MODELS_FILE: z
    .string()
    .optional()
    .describe(
      'A JSON catalog of the operator\'s models ({"models": [...]}) added to the built-in ones (docs/providers.md).',
    ),
  KEEL_MODEL_URLS: z
    .string()
    .optional()
    .describe(
      "Comma-separated extra base URLs one-line models may name, each optionally with the variable holding its key (docs/providers.md).",
    ),
} satisfies SettingsShape;
