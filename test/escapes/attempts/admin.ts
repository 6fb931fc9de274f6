/**
 * The admin API with a tenant's key: the stack serves it (an operator key is configured), and the
 * operator has made a stored tenant whose name and settings carry a canary, with one API key. The
 * attacker's key is tried on every admin route, on spellings of their paths, and on its own usage
 * route with another tenant named in the query. The outcome: every admin route answers 401, no
 * answer carries the stored tenant's canary, and the tenant's settings and keys are as the
 * operator left them.
 */
import { createHash } from "node:crypto";
import type { ApiAnswer, ChaosApiClient } from "../../chaos/api-client";
import { type Attempt, answerLine, judge, type Verdict } from "../attempt";
import { ATTACKER_TENANT, type EscapeContext } from "../context";

/** The stored tenant the attacker goes after (made by the operator). */
const TARGET = "stored-victim";

interface Target {
  operator: ChaosApiClient;
  /** A marker in the tenant's name and settings: any answer holding it leaked them. */
  canary: string;
  keyId: string;
  /** The settings and key list as the operator left them (JSON). */
  settings: string;
  keys: string;
}

let staged: Promise<Target> | undefined;

/** Makes the stored tenant once (its settings carry the canary) and records what it looks like. */
function stage(ctx: EscapeContext): Promise<Target> {
  staged ??= (async () => {
    const operator = ctx.operatorApi;
    if (!operator) throw new Error("the stack has no operator key: the admin API is not served");
    const canary = `admin-canary-${createHash("sha256").update(ctx.victimSession).digest("hex").slice(0, 12)}`;
    const created = await operator.post(
      "/v1/admin/tenants",
      { id: TARGET, name: canary },
      `tenant-${TARGET}`,
    );
    if (created.status !== 201 && created.status !== 409)
      throw new Error(`could not create the stored tenant: ${answerLine(created)}`);
    const put = await operator.put(`/v1/admin/tenants/${TARGET}/settings`, {
      quotas: { concurrentRuns: 1, tokensPerDay: 1000 },
      defaults: { systemPrompt: canary },
    });
    if (put.status !== 200) throw new Error(`could not set its settings: ${answerLine(put)}`);
    const key = await operator.post(`/v1/admin/tenants/${TARGET}/keys`, { label: canary }, `key-${TARGET}`);
    if (key.status !== 201) throw new Error(`could not issue its key: ${answerLine(key)}`);
    return {
      operator,
      canary,
      keyId: (key.body as { id: string }).id,
      settings: (await operator.get(`/v1/admin/tenants/${TARGET}/settings`)).text,
      keys: (await operator.get(`/v1/admin/tenants/${TARGET}/keys`)).text,
    };
  })();
  return staged;
}

/** Findings of one answer: a success on an admin route, or the canary in any answer. */
function leaks(label: string, answer: ApiAnswer, target: Target, adminRoute: boolean): string[] {
  const found: string[] = [];
  if (adminRoute && answer.status < 300) found.push(`${label} answered ${answer.status}`);
  if (answer.text.includes(target.canary)) found.push(`${label} answered with the stored tenant's canary`);
  return found;
}

/** What moved on the stored tenant: its settings or its keys differ from what the operator left. */
async function changed(target: Target): Promise<string[]> {
  const found: string[] = [];
  if ((await target.operator.get(`/v1/admin/tenants/${TARGET}/settings`)).text !== target.settings)
    found.push("the stored tenant's settings changed");
  if ((await target.operator.get(`/v1/admin/tenants/${TARGET}/keys`)).text !== target.keys)
    found.push("the stored tenant's keys changed");
  return found;
}

async function tryAll(
  ctx: EscapeContext,
  requests: Array<{ label: string; send: (api: ChaosApiClient) => Promise<ApiAnswer>; admin: boolean }>,
): Promise<Verdict> {
  const target = await stage(ctx);
  const findings: string[] = [];
  const answers: string[] = [];
  for (const request of requests) {
    const answer = await request.send(ctx.api);
    findings.push(...leaks(request.label, answer, target, request.admin));
    answers.push(answerLine(answer));
  }
  findings.push(...(await changed(target)));
  return judge(findings, `${requests.length} requests: ${[...new Set(answers)].join(" / ")}`);
}

const base = `/v1/admin/tenants`;

const everyRoute: Attempt = {
  id: "admin-tenant-key",
  class: "API",
  description:
    "the attacker's tenant key on every admin route: list and read tenants, read and replace a tenant's settings, list, issue and revoke its keys, read its usage",
  short: true,
  run: (ctx) =>
    stage(ctx).then((target) =>
      tryAll(ctx, [
        { label: "list tenants", admin: true, send: (api) => api.get(base) },
        {
          label: "create a tenant",
          admin: true,
          send: (api) => api.post(base, { id: "mallory-made" }, "adm-1"),
        },
        { label: "read the tenant", admin: true, send: (api) => api.get(`${base}/${TARGET}`) },
        { label: "read its settings", admin: true, send: (api) => api.get(`${base}/${TARGET}/settings`) },
        {
          label: "replace its settings",
          admin: true,
          send: (api) => api.put(`${base}/${TARGET}/settings`, { quotas: {} }),
        },
        {
          label: "raise its own quotas",
          admin: true,
          send: (api) => api.put(`${base}/mallory/settings`, { quotas: {} }),
        },
        { label: "list its keys", admin: true, send: (api) => api.get(`${base}/${TARGET}/keys`) },
        {
          label: "issue it a key",
          admin: true,
          send: (api) => api.post(`${base}/${TARGET}/keys`, { label: "mallory" }, "adm-2"),
        },
        {
          label: "revoke its key",
          admin: true,
          send: (api) => api.delete(`${base}/${TARGET}/keys/${target.keyId}`),
        },
        { label: "read its usage", admin: true, send: (api) => api.get(`${base}/${TARGET}/usage`) },
      ]),
    ),
};

const pathSpellings: Attempt = {
  id: "admin-path-spellings",
  class: "API",
  description:
    "admin routes spelled otherwise with the attacker's key: doubled and trailing slashes, upper case, encoded slashes, a dot segment",
  short: false,
  run: (ctx) =>
    tryAll(
      ctx,
      [
        `/v1//admin/tenants/${TARGET}/settings`,
        `/v1/admin/tenants/${TARGET}/settings/`,
        `/V1/ADMIN/TENANTS/${TARGET}/SETTINGS`,
        `/v1/admin%2Ftenants%2F${TARGET}%2Fsettings`,
        `/v1/admin/tenants/${TARGET}%2Fsettings`,
        `/v1/sessions/%2E%2E/admin/tenants/${TARGET}/settings`,
        `/v1/admin/tenants/${TARGET}/settings?tenantId=mallory`,
      ].map((path) => ({ label: `GET ${path}`, admin: true, send: (api: ChaosApiClient) => api.get(path) })),
    ),
};

const usageOfAnother: Attempt = {
  id: "usage-other-tenant",
  class: "API",
  description:
    "the attacker's own usage route with another tenant named in the query (tenantId, tenant, twice): the answer must be the attacker's own usage or a refusal",
  short: false,
  async run(ctx) {
    const findings: string[] = [];
    const answers: string[] = [];
    for (const other of ["victim", TARGET]) {
      for (const query of [
        `tenantId=${other}`,
        `tenant=${other}`,
        `tenantId=${ATTACKER_TENANT}&tenantId=${other}`,
      ]) {
        const before = await ctx.api.get("/v1/usage");
        const answer = await ctx.api.get(`/v1/usage?${query}`);
        const after = await ctx.api.get("/v1/usage");
        answers.push(answerLine(answer));
        // The attacker's own usage may grow while this runs: either reading of it is its own.
        if (answer.status < 300 && answer.text !== before.text && answer.text !== after.text)
          findings.push(`/v1/usage?${query} answered another tenant's usage`);
      }
    }
    findings.push(...(await changed(await stage(ctx))));
    return judge(findings, `${answers.length} requests: ${[...new Set(answers)].join(" / ")}`);
  },
};

export const adminAttempts: Attempt[] = [everyRoute, pathSpellings, usageOfAnother];
