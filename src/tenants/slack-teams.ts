/**
 * Slack teams in tenant settings (docs/integrations.md, "Teams in tenant settings"). A team
 * belongs to one tenant at most: `slack-teams/{teamId}.json` names its tenant and is written with
 * a conditional create, so of two admins mapping one team to two tenants at once exactly one
 * wins; the other is refused. The claim decides which tenant an event reaches; the tenant's
 * settings (`slack.teams`) give the team's tools. A team serves events only while both agree.
 */
import { z } from "zod";
import type { BoundedCache } from "../core/bounded-cache";
import { KEY_CACHE_SECONDS, shortCache } from "./key-cache";
import { type SlackTeam, teamOf } from "./slack-team-tools";
import type { TenantStore } from "./store";
import { TenantIdSchema, type TenantSettings } from "./types";

const ClaimSchema = z.object({ tenantId: TenantIdSchema });

/** A team another tenant (or the operator's KEEL_SLACK_TEAMS) already maps. */
export interface SlackTeamConflict {
  teamId: string;
  /** The tenant holding it; absent when the operator's mapping names it. */
  tenantId?: string;
}

export class SlackTeamTakenError extends Error {
  constructor(readonly conflicts: SlackTeamConflict[]) {
    const held = conflicts.map(
      ({ teamId, tenantId }) =>
        `${teamId} (${tenantId === undefined ? "the operator's KEEL_SLACK_TEAMS" : `tenant ${tenantId}`})`,
    );
    super(
      `Slack teams already mapped elsewhere: ${held.join(", ")}. A team belongs to one tenant only: unmap it there first.`,
    );
  }
}

function claimKey(store: TenantStore, teamId: string): string {
  return `${store.prefix}slack-teams/${teamId}.json`;
}

/** The tenant whose claim holds the team, or undefined. */
async function slackTeamOwner(store: TenantStore, teamId: string): Promise<string | undefined> {
  return (await store.objects.read(claimKey(store, teamId), ClaimSchema))?.tenantId;
}

/**
 * Claims each team for the tenant: all or none. A team the tenant holds already stays its; when
 * another tenant holds one, the claims made here are given back and `SlackTeamTakenError` names it.
 */
async function claimTeams(store: TenantStore, tenantId: string, teamIds: readonly string[]): Promise<void> {
  const made: string[] = [];
  const conflicts: SlackTeamConflict[] = [];
  for (const teamId of teamIds) {
    if (await store.objects.createIfAbsent(claimKey(store, teamId), { tenantId })) {
      made.push(teamId);
      continue;
    }
    const owner = await slackTeamOwner(store, teamId);
    // Released between the create and the read: one more try decides it.
    if (owner === undefined && (await store.objects.createIfAbsent(claimKey(store, teamId), { tenantId })))
      made.push(teamId);
    else if (owner !== tenantId)
      conflicts.push({ teamId, ...(owner !== undefined ? { tenantId: owner } : {}) });
  }
  if (conflicts.length === 0) return;
  await releaseTeams(store, tenantId, made);
  throw new SlackTeamTakenError(conflicts);
}

/** Gives back the tenant's claims on these teams (a claim of another tenant is left alone). */
async function releaseTeams(store: TenantStore, tenantId: string, teamIds: readonly string[]): Promise<void> {
  for (const teamId of teamIds) {
    // While the claim names this tenant no other can write it: reading then removing is safe.
    if ((await slackTeamOwner(store, teamId)) === tenantId)
      await store.objects.remove(claimKey(store, teamId));
  }
}

const teamsOf = (settings: TenantSettings): string[] => Object.keys(settings.slack?.teams ?? {});

/**
 * Replaces the tenant's settings, claiming the Slack teams they map first and giving back those
 * they no longer map after. Throws `SlackTeamTakenError` (nothing written) when another tenant
 * holds a team. Two writes of one tenant's settings at once: the later settings win, as for every
 * setting; a team one of them gave back may then be listed without its claim (not served) until
 * the settings are written again.
 */
export async function putSettingsClaimingTeams(
  store: TenantStore,
  tenantId: string,
  settings: TenantSettings,
): Promise<void> {
  const before = teamsOf(await store.getSettings(tenantId));
  const after = teamsOf(settings);
  await claimTeams(store, tenantId, after);
  await store.putSettings(tenantId, settings);
  await releaseTeams(
    store,
    tenantId,
    before.filter((teamId) => !after.includes(teamId)),
  );
}

/**
 * The Slack teams tenants map in their settings, as events look them up: each answer (found or
 * not) is kept `KEY_CACHE_SECONDS`, so a change through the admin API reaches every API instance
 * within that bound, like a key's.
 */
export class StoredSlackTeams {
  private readonly cache: BoundedCache<string, SlackTeam | undefined>;

  constructor(
    private readonly store: TenantStore,
    ttlMs = KEY_CACHE_SECONDS * 1000,
  ) {
    this.cache = shortCache(ttlMs);
  }

  /** The team's tenant and tools, or undefined when no tenant maps it (or its claim and settings disagree). */
  teamOf(teamId: string): Promise<SlackTeam | undefined> {
    return this.cache.getOrLoad(teamId, async () => {
      const tenantId = await slackTeamOwner(this.store, teamId);
      if (tenantId === undefined) return undefined;
      const teams = (await this.store.getSettings(tenantId)).slack?.teams ?? {};
      const entry = Object.hasOwn(teams, teamId) ? teams[teamId] : undefined;
      return entry && teamOf(tenantId, entry.allow, entry.ask);
    });
  }
}
