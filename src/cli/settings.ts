/** The `keel` command's own variables (beside the API client's, CLIENT_ENV). */
import { z } from "zod";
import type { SettingsShape } from "../core/env-settings";

export const CLI_ENV = {
  KEEL_CLI_SOURCES: z
    .enum(["1"])
    .optional()
    .describe("1: bin/keel.js runs the TypeScript sources even when the compiled CLI is current."),
} satisfies SettingsShape;
