/**
 * Launchers: how Keel starts a runner per session for a `launched` environment and stops it when
 * the session goes idle (docs/environments.md, "Launched environments").
 *
 * The worker activity that watches a call of the environment (`watchRunnerCall`,
 * activities/runner-tool.ts) asks its launcher once a second, for as long as the call goes on, to
 * make sure a runner serves the call's session, so a runner that died or stopped idle is replaced. A launched runner gets only a runner token
 * scoped to its tenant, environment and session, and the API's URL: never the worker's Temporal,
 * S3 or provider credentials.
 */
import { MCP_HOSTS_SETTING, MCP_MOUNTS_SETTING } from "../../mcp/policy";
import type { EnvironmentStore } from "../store";

/** The session a runner is wanted for. */
export interface LaunchRequest {
  tenantId: string;
  environment: string;
  sessionId: string;
}

export interface Launcher {
  /**
   * Makes sure a runner serves the session: starts one unless the one this launcher started for
   * it still runs. Resolves once it is started (not once it has connected); cheap when it runs.
   */
  ensure(request: LaunchRequest): Promise<void>;
  /** Stops every runner this launcher started and revokes their tokens (worker shutdown). */
  close(): Promise<void>;
}

/** Issuing and revoking the session-scoped tokens a launcher gives its runners. */
export type LauncherTokens = Pick<EnvironmentStore, "issueToken" | "revoke">;

/** What every launcher is given, whatever starts its runners. */
export interface LauncherOptions {
  /** The API's URL as the runner reaches it. */
  apiUrl: string;
  tokens: LauncherTokens;
  /** A runner with no call for this long stops. */
  idleMs: number;
  /** The runners' MCP mounts and hosts (never secrets): launchedMcpEnv. */
  mcpSettings?: LaunchedMcpSettings;
  log: (level: "info" | "warn", message: string, fields?: Record<string, unknown>) => void;
}

/** Where a Fargate launcher's runner tasks run: its ECS cluster, task definition and network. */
export interface FargateTaskSettings {
  /** The cluster's name or ARN. */
  cluster: string;
  /** The runner's task definition (family, family:revision or ARN); its entry point is `keel runner`. */
  taskDefinition: string;
  /** The runner container's name in the task definition (its overrides go there). */
  container: string;
  subnets: string[];
  securityGroups: string[];
  /** A public IP for the task: needed in public subnets without NAT to reach the API. */
  assignPublicIp: boolean;
}

/**
 * A worker's launcher as its settings give it (KEEL_LAUNCHER): what every launcher takes from
 * them, and the ECS settings of `fargate`. The worker adds the rest of `LauncherOptions`.
 */
export type LauncherConfig = Pick<LauncherOptions, "apiUrl" | "idleMs"> &
  ({ kind: "local" } | ({ kind: "fargate" } & FargateTaskSettings));

/** Default idle time after which a launched runner stops (KEEL_LAUNCHER_IDLE_SECONDS). */
export const DEFAULT_LAUNCHED_IDLE_SECONDS = 300;

/**
 * Where a launched runner's stdio MCP servers find their programs and which private hosts its HTTP
 * servers may reach: the worker's KEEL_MCP_MOUNTS and KEEL_MCP_HOSTS, passed on as they are (a
 * launched runner runs Keel's image or this machine's copy, whose paths they name). A launched
 * runner holds no secret: a call's tenant secrets come with its claim.
 */
export interface LaunchedMcpSettings {
  mounts?: string;
  hosts?: string;
}

/** The worker's MCP settings a launched runner gets: its mounts and hosts, nothing else. */
export function launchedMcpSettings(
  mounts: readonly string[],
  privateHosts: readonly string[],
): LaunchedMcpSettings {
  return {
    ...(mounts.length > 0 ? { mounts: mounts.join(",") } : {}),
    ...(privateHosts.length > 0 ? { hosts: privateHosts.join(",") } : {}),
  };
}

/** The variables a launched runner gets for `settings` (none for what is unset or empty). */
export function launchedMcpEnv(settings: LaunchedMcpSettings | undefined): Record<string, string> {
  return {
    ...(settings?.mounts ? { [MCP_MOUNTS_SETTING]: settings.mounts } : {}),
    ...(settings?.hosts ? { [MCP_HOSTS_SETTING]: settings.hosts } : {}),
  };
}
