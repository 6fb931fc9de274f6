/**
 * `keel env create|list|show|token|revoke|delete` (with the tenant's API key) and `keel runner`
 * (with a runner token): environments, where a session's tools run (docs/architecture.md,
 * "Environments").
 */
import { homedir } from "node:os";
import path from "node:path";
import { ApiClient, EXIT, UsageError } from "../../api-client/client";
import { McpConnections } from "../../mcp/connections";
import { runRunner } from "../../runner/runner";
import { runnerSettingsFromEnv } from "../../runner/settings";
import { type Command, integerOption, parseCommand, printJson } from "../command";

const ENV_USAGE =
  "keel env create <name> [--kind runner|launched] | list | show <name> | token <name> | revoke <name> <token id> | delete <name>";

export const envCommand: Command = {
  usage: ENV_USAGE,
  summary: "manage environments (where tools run) and their runner tokens",
  help: "`keel env token NAME` prints a new runner token once; give it to `keel runner --env NAME` as KEEL_RUNNER_TOKEN.",
  async run(argv, context) {
    const parsed = parseCommand(
      argv,
      { description: { type: "string" }, kind: { type: "string" } },
      { min: 1, max: 3, names: ENV_USAGE },
      context,
    );
    const [action, name, tokenId] = parsed.positionals as [string, string | undefined, string | undefined];
    const { client } = parsed;
    const environments = client.api.v1.environments;
    const needName = (): string => {
      if (name === undefined) throw new UsageError(`keel env ${action} needs an environment name`);
      return name;
    };
    const show = (value: unknown, text: string) => {
      if (parsed.json) printJson(context, value);
      else context.out.write(text);
    };
    switch (action) {
      case "create": {
        const description = parsed.values.description as string | undefined;
        const kind = (parsed.values.kind as string | undefined) ?? "runner";
        if (kind !== "runner" && kind !== "launched")
          throw new UsageError("--kind is `runner` (you start its runners) or `launched` (Keel does)");
        const created = await client.json(
          environments.$post({
            json: { name: needName(), kind, ...(description ? { description } : {}) },
          }),
        );
        show(created, `created environment ${created.name} (${created.kind})\n`);
        return EXIT.ok;
      }
      case "list": {
        const listed = await client.json(environments.$get());
        show(
          listed,
          listed.environments
            .map((environment) => `${environment.name}\t${environment.kind}\t${environment.createdAt}\n`)
            .join(""),
        );
        return EXIT.ok;
      }
      case "show": {
        const shown = await client.json(environments[":name"].$get({ param: { name: needName() } }));
        show(
          shown,
          `${shown.name} (${shown.kind}), ${shown.waitingCalls} call(s) waiting or running\n${shown.tokens.map((token) => `  token ${token.tokenId} created ${token.createdAt}\n`).join("")}`,
        );
        return EXIT.ok;
      }
      case "token": {
        const issued = await client.json(environments[":name"].tokens.$post({ param: { name: needName() } }));
        show(
          issued,
          `${issued.token}\n(token id ${issued.tokenId}; shown once: keep it secret, revoke with keel env revoke ${name} ${issued.tokenId})\n`,
        );
        return EXIT.ok;
      }
      case "revoke": {
        if (tokenId === undefined)
          throw new UsageError("keel env revoke needs an environment name and a token id");
        await client.response(
          environments[":name"].tokens[":tokenId"].$delete({ param: { name: needName(), tokenId } }),
        );
        show({ revoked: tokenId }, `revoked token ${tokenId}\n`);
        return EXIT.ok;
      }
      case "delete": {
        await client.response(environments[":name"].$delete({ param: { name: needName() } }));
        show({ deleted: name }, `deleted environment ${name}\n`);
        return EXIT.ok;
      }
      default:
        throw new UsageError(`unknown action '${action}'`);
    }
  },
};

export const runnerCommand: Command = {
  usage:
    "keel runner --env <name> [--workspace DIR] [--workspace-root DIR] [--concurrency N] [--snapshots] [--idle-exit SECONDS]",
  summary: "run the tool calls of an environment on this machine (token: KEEL_RUNNER_TOKEN or --token)",
  help: `Connects out to the API (--url / KEEL_API_URL) with a runner token and runs the environment's tool calls until Ctrl-C.
  --workspace DIR       every call acts on this directory (an existing checkout)
  --workspace-root DIR  else one directory per session below this (default ~/.keel/runner/<env>)
  --concurrency N       calls run at once (default 4)
  --token TOKEN         the runner token (default $KEEL_RUNNER_TOKEN)
  --snapshots           restore each session's workspace from the API, store it there after each call (an ephemeral host)
  --idle-exit SECONDS   stop after this long without a call (launched runners)
Commands and the runs' stdio MCP servers run in the bubblewrap sandbox; KEEL_SANDBOX=off runs them unsandboxed
(a host without user namespaces). KEEL_MCP_HOSTS and KEEL_MCP_MOUNTS apply here as on a worker; a call's tenant
secrets (a run's secrets, a server's {secret: NAME}) come with the call from the API and are dropped after it.`,
  async run(argv, context) {
    const parsed = parseCommand(
      argv,
      {
        env: { type: "string" },
        workspace: { type: "string" },
        "workspace-root": { type: "string" },
        concurrency: { type: "string" },
        token: { type: "string" },
        snapshots: { type: "boolean" },
        "idle-exit": { type: "string" },
      },
      { min: 0, max: 0, names: "no positional arguments" },
      context,
    );
    const environment = parsed.values.env as string | undefined;
    if (!environment) throw new UsageError("--env <name> is required");
    const settings = runnerSettingsFromEnv(context.env);
    const token = (parsed.values.token as string | undefined) ?? settings.token;
    if (!token)
      throw new UsageError("a runner token is required: --token or KEEL_RUNNER_TOKEN (keel env token NAME)");
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
    const log = (record: Record<string, unknown>) =>
      context.err(`${JSON.stringify({ time: new Date().toISOString(), ...record })}\n`);
    const workspace = parsed.values.workspace as string | undefined;
    const idleExit = integerOption(parsed.values["idle-exit"] as string | undefined, "idle-exit", 1);
    log({ msg: "runner started", environment, api: parsed.apiUrl, ...(workspace ? { workspace } : {}) });
    await runRunner({
      client: new ApiClient({ baseUrl: parsed.apiUrl, apiKey: token }),
      environment,
      ...(workspace !== undefined ? { workspace } : {}),
      workspaceRoot:
        (parsed.values["workspace-root"] as string | undefined) ??
        path.join(homedir(), ".keel", "runner", environment),
      sandbox: settings.sandbox,
      // The run's MCP servers start (stdio) or are reached (HTTP) from here, under this host's KEEL_MCP_*.
      mcp: new McpConnections(settings.mcp),
      concurrency: integerOption(parsed.values.concurrency as string | undefined, "concurrency", 1) ?? 4,
      snapshots: parsed.values.snapshots === true,
      ...(idleExit !== undefined ? { idleExitMs: idleExit * 1000 } : {}),
      log,
      signal: stop.signal,
    });
    return EXIT.ok;
  },
};
