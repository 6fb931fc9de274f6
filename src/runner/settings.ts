/**
 * A runner's variables (`keel runner`), read once by the command from the process's environment:
 * where the API is, its token, its sandbox and the MCP settings of the runs' servers.
 */
import { z } from "zod";
import { CLIENT_ENV } from "../api-client/settings";
import { parseSettings, type SettingsShape } from "../core/env-settings";
import { MCP_ENV, type McpSettings, mcpSettingsFromEnv } from "../mcp/policy";
import { hostEnvironment } from "../tools/environment";
import { DEFAULT_PROCESS_LIMITS, type SandboxConfig } from "../tools/sandbox";

export const RUNNER_ENV = {
  KEEL_API_URL: CLIENT_ENV.KEEL_API_URL,
  KEEL_RUNNER_TOKEN: z
    .string()
    .optional()
    .describe("The runner token (secret) of one environment (keel env token NAME); --token wins."),
  KEEL_SANDBOX: z
    .enum(["on", "off"])
    .default("on")
    .describe('"off" runs tool processes unsandboxed (hosts without user namespaces).'),
  KEEL_WORKSPACE_MAX_MB: z.coerce
    .number()
    .int()
    .positive()
    .default((DEFAULT_PROCESS_LIMITS.workspaceBytes ?? 0) / 1024 ** 2)
    .describe(
      'Bytes of files one workspace may hold on this runner, in MiB (the same quota as a worker\'s: docs/tools.md, "Workspace quota").',
    ),
  ...MCP_ENV,
} satisfies SettingsShape;

export interface RunnerSettings {
  /** KEEL_RUNNER_TOKEN, when set. */
  token?: string;
  sandbox: SandboxConfig;
  mcp: McpSettings;
}

/** Throws `Invalid runner configuration: …` naming every invalid variable, never a value. */
export function runnerSettingsFromEnv(env: NodeJS.ProcessEnv): RunnerSettings {
  const values = parseSettings(RUNNER_ENV, env, "runner");
  let mcp: McpSettings;
  try {
    mcp = mcpSettingsFromEnv(env);
  } catch (error) {
    throw new Error(
      `Invalid runner configuration: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  return {
    ...(values.KEEL_RUNNER_TOKEN ? { token: values.KEEL_RUNNER_TOKEN } : {}),
    sandbox: {
      isolation: values.KEEL_SANDBOX === "off" ? "off" : "bwrap",
      limits: { ...DEFAULT_PROCESS_LIMITS, workspaceBytes: values.KEEL_WORKSPACE_MAX_MB * 1024 ** 2 },
      passEnv: [],
      hostEnv: hostEnvironment(env, []),
      // The runner's host is the tenant's own: network "full" (which the API allowed for the run) is its network.
      fullNetwork: "on",
    },
    mcp,
  };
}
