/**
 * Which Keel tenant each Slack workspace (team) belongs to, and what runs started from its
 * threads may do: an operator's mapping (KEEL_SLACK_TEAMS or KEEL_SLACK_TEAMS_FILE), validated
 * when the API starts, and the tenants' own (`slack.teams` in their settings, the same tool lists:
 * `SlackTeamToolsSchema`; tenants/slack-teams.ts). The operator's wins. Events of a team mapped
 * nowhere start nothing.
 *
 * ```json
 * {
 *   "T0123ABCD": "acme",
 *   "T0456EFGH": { "tenant": "globex", "allow": ["read", "grep", "find", "ls"], "ask": ["edit"] }
 * }
 * ```
 * A team's tools are `allow` (run without asking) and `ask` (each call waits for an approval
 * through the API, `POST /v1/sessions/{id}/approvals/{toolCallId}`); every other tool is neither
 * offered to the model nor run (the run's policy denies it). Without lists a team gets the
 * read-only tools: anyone who can write in a channel the app is in can start a run, so writing
 * files or running commands is the operator's explicit choice.
 */
import { z } from "zod";
import { DEFAULT_RUN_SETTINGS, type ToolPolicy } from "../contracts/runs";
import { isValidId } from "../core/ids";
import { builtinTools } from "../tools/index";

/** What a team's runs may do when its mapping names no tools: read the workspace, nothing else. */
const READ_ONLY_TOOLS: readonly string[] = ["read", "grep", "find", "ls"];

/** Slack team ids: `T` then upper-case letters and digits (Enterprise Grid orgs: `E`). */
export const SLACK_TEAM_ID = /^[TE][A-Z0-9]{2,30}$/;
export const SLACK_TEAM_ID_HINT = "not a Slack team id (Slack team ids look like T0123ABCD)";

const toolName = z.enum(builtinTools.map((tool) => tool.name) as [string, ...string[]]);
const tenantId = z.string().refine(isValidId, "a tenant id (^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$)");

/** A team's tool lists: without them, the read-only tools. */
const toolListFields = {
  allow: z.array(toolName).default([...READ_ONLY_TOOLS]),
  ask: z.array(toolName).default([]),
};
const noToolInBoth = [
  (entry: { allow: string[]; ask: string[] }) => !entry.allow.some((tool) => entry.ask.includes(tool)),
  { message: "a tool is in both allow and ask" },
] as const;

/**
 * One team's tool lists in a tenant's settings (`slack.teams`, docs/integrations.md): the same
 * lists, defaults and checks as the operator's mapping, without the tenant (it is the settings').
 */
export const SlackTeamToolsSchema = z
  .object(toolListFields)
  .strict()
  .refine(...noToolInBoth);

/** A bare tenant id is short for `{"tenant": id}`. */
const TeamEntrySchema = z.preprocess(
  (entry) => (typeof entry === "string" ? { tenant: entry } : entry),
  z
    .object({ tenant: tenantId, ...toolListFields })
    .strict()
    .refine(...noToolInBoth),
);

const TeamsSchema = z
  .record(z.string().regex(SLACK_TEAM_ID, SLACK_TEAM_ID_HINT), TeamEntrySchema)
  .refine((teams) => Object.keys(teams).length > 0, "map at least one Slack team to a tenant");

/** One Slack team's tenant and the tools and policy of the runs its threads start. */
export interface SlackTeam {
  tenantId: string;
  /** The tools offered to the model: the team's `allow` and `ask` lists. */
  tools: string[];
  policy: ToolPolicy;
}

export type SlackTeams = Readonly<Record<string, SlackTeam>>;

/**
 * Parses the operator's team mapping (JSON text); throws one error naming every problem and
 * `source`. Team ids and tenant ids are not secrets, so they may be quoted.
 */
export function parseSlackTeams(text: string, source: string): SlackTeams {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`Invalid Slack team mapping in ${source}: not JSON`);
  }
  const parsed = TeamsSchema.safeParse(value);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      // A record's key problem carries its own message one level down; say it plainly.
      const message = issue.code === "invalid_key" ? SLACK_TEAM_ID_HINT : issue.message;
      return `${issue.path.join(".") || "(mapping)"}: ${message}`;
    });
    throw new Error(`Invalid Slack team mapping in ${source}: ${problems.join("; ")}`);
  }
  return Object.fromEntries(
    Object.entries(parsed.data).map(([team, entry]) => [team, teamOf(entry.tenant, entry.allow, entry.ask)]),
  );
}

/** The team of `tenantId` whose runs get the tools `allow` (freely) and `ask` (each after an approval). */
export function teamOf(tenantId: string, allow: readonly string[], ask: readonly string[]): SlackTeam {
  return {
    tenantId,
    tools: [...new Set([...allow, ...ask])],
    // The tools not offered are denied as well: a model naming one anyway gets a refusal.
    policy: {
      rules: [
        ...allow.map((tool) => ({ tool, action: "allow" as const })),
        ...ask.map((tool) => ({ tool, action: "ask" as const })),
      ],
      default: "deny",
      approvalTimeoutMs: DEFAULT_RUN_SETTINGS.policy.approvalTimeoutMs,
    },
  };
}
