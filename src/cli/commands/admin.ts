/**
 * `keel admin …` (with the operator's key: KEEL_ADMIN_KEY or --key) and `keel usage` (with the
 * tenant's key): tenants, their API keys and settings, and usage per day (docs/api.md, "Tenant
 * administration" and "Usage").
 */
import { readFileSync } from "node:fs";
import { EXIT, UsageError } from "../../api-client/client";
import { type Command, type CommandContext, parseCommand, printJson } from "../command";

const ADMIN_USAGE =
  "keel admin tenant create <id> [--name N] | tenant list | tenant show <id> | key create <tenant> [--label L] | key list <tenant> | key revoke <tenant> <key id> | settings get <tenant> | settings set <tenant> <file.json|-> | usage <tenant> [--from D] [--to D]";

/** The context with the operator's key in place of a tenant's (`--key` still wins). */
const asOperator = (context: CommandContext): CommandContext => ({
  ...context,
  env: { ...context.env, KEEL_API_KEY: context.env.KEEL_ADMIN_KEY },
});

export const adminCommand: Command = {
  usage: ADMIN_USAGE,
  summary: "administer tenants, their API keys, settings and usage (operator key: KEEL_ADMIN_KEY)",
  help: "`keel admin key create TENANT` prints the new API key once. `settings set` replaces the settings with a JSON document (models, modelHosts, defaults, quotas, slack).",
  async run(argv, context) {
    const parsed = parseCommand(
      argv,
      {
        name: { type: "string" },
        label: { type: "string" },
        from: { type: "string" },
        to: { type: "string" },
      },
      { min: 1, max: 4, names: ADMIN_USAGE },
      asOperator(context),
    );
    const [group, action, first, second] = parsed.positionals as (string | undefined)[];
    const tenants = parsed.client.api.v1.admin.tenants;
    const { client } = parsed;
    const show = (value: unknown, text: string) => {
      if (parsed.json) printJson(context, value);
      else context.out.write(text);
    };
    const need = (value: string | undefined, what: string): string => {
      if (value === undefined) throw new UsageError(`keel admin ${group} ${action ?? ""} needs ${what}`);
      return value;
    };
    const str = (name: string) => parsed.values[name] as string | undefined;
    if (group === "usage") {
      const query = {
        ...(str("from") ? { from: str("from") } : {}),
        ...(str("to") ? { to: str("to") } : {}),
      };
      const usage = await client.json(
        tenants[":tenantId"].usage.$get({ param: { tenantId: need(action, "a tenant id") }, query }),
      );
      show(usage, usageTable(usage.days));
      return EXIT.ok;
    }
    switch (`${group} ${action}`) {
      case "tenant create": {
        const name = str("name");
        const created = await client.json(
          tenants.$post({ json: { id: need(first, "a tenant id"), ...(name ? { name } : {}) } }),
        );
        show(created, `created tenant ${created.id}\n`);
        return EXIT.ok;
      }
      case "tenant list": {
        const listed = await client.json(tenants.$get());
        show(listed, listed.tenants.map((t) => `${t.id}\t${t.name ?? ""}\t${t.createdAt}\n`).join(""));
        return EXIT.ok;
      }
      case "tenant show": {
        const tenant = await client.json(
          tenants[":tenantId"].$get({ param: { tenantId: need(first, "a tenant id") } }),
        );
        show(tenant, `${tenant.id}\t${tenant.name ?? ""}\tcreated ${tenant.createdAt}\n`);
        return EXIT.ok;
      }
      case "key create": {
        const label = str("label");
        const param = { tenantId: need(first, "a tenant id") };
        const issued = await client.json(
          tenants[":tenantId"].keys.$post({ param, json: label ? { label } : {} }),
        );
        show(
          issued,
          `${issued.key}\n(key id ${issued.id}; shown once: keep it secret, revoke with keel admin key revoke ${param.tenantId} ${issued.id})\n`,
        );
        return EXIT.ok;
      }
      case "key list": {
        const listed = await client.json(
          tenants[":tenantId"].keys.$get({ param: { tenantId: need(first, "a tenant id") } }),
        );
        show(
          listed,
          listed.keys
            .map(
              (key) =>
                `${key.id}\t${key.label ?? ""}\t${key.createdAt}\t${key.revokedAt ? `revoked ${key.revokedAt}` : "active"}\n`,
            )
            .join(""),
        );
        return EXIT.ok;
      }
      case "key revoke": {
        const param = { tenantId: need(first, "a tenant id"), keyId: need(second, "a key id") };
        const revoked = await client.json(tenants[":tenantId"].keys[":keyId"].$delete({ param }));
        show(revoked, `revoked ${revoked.id} (refused everywhere within seconds)\n`);
        return EXIT.ok;
      }
      case "settings get": {
        const settings = await client.json(
          tenants[":tenantId"].settings.$get({ param: { tenantId: need(first, "a tenant id") } }),
        );
        printJson(context, settings);
        return EXIT.ok;
      }
      case "settings set": {
        const param = { tenantId: need(first, "a tenant id") };
        const file = need(second, "a JSON file (or - for stdin)");
        let json: unknown;
        try {
          json = JSON.parse(readFileSync(file === "-" ? 0 : file, "utf8"));
        } catch (error) {
          throw new UsageError(`cannot read settings from ${file}: ${(error as Error).message}`);
        }
        // The server validates the document (400 names what is wrong).
        const stored = await client.json(tenants[":tenantId"].settings.$put({ param, json: json as never }));
        show(stored, `stored the settings of ${param.tenantId}\n`);
        return EXIT.ok;
      }
      default:
        throw new UsageError(`usage: ${ADMIN_USAGE}`);
    }
  },
};

export const usageCommand: Command = {
  usage: "keel usage [--from YYYY-MM-DD] [--to YYYY-MM-DD]",
  summary: "your tenant's usage per UTC day: runs, model turns, tokens, cost, tool seconds",
  async run(argv, context) {
    const parsed = parseCommand(
      argv,
      { from: { type: "string" }, to: { type: "string" } },
      { min: 0, max: 0, names: "no arguments" },
      context,
    );
    const from = parsed.values.from as string | undefined;
    const to = parsed.values.to as string | undefined;
    const usage = await parsed.client.json(
      parsed.client.api.v1.usage.$get({ query: { ...(from ? { from } : {}), ...(to ? { to } : {}) } }),
    );
    if (parsed.json) printJson(context, usage);
    else context.out.write(usageTable(usage.days));
    return EXIT.ok;
  },
};

function usageTable(
  days: { day: string; runs: number; turns: number; tokens: number; costUsd: number; toolSeconds: number }[],
): string {
  const rows = days
    .filter((day) => day.runs + day.turns + day.toolSeconds > 0)
    .map(
      (d) =>
        `${d.day}\t${d.runs}\t${d.turns}\t${d.tokens}\t$${d.costUsd.toFixed(4)}\t${d.toolSeconds.toFixed(1)}\n`,
    );
  return `day\truns\tturns\ttokens\tcost\ttool s\n${rows.join("")}`;
}
