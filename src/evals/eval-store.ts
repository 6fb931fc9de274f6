/**
 * Where an eval lives in S3, beside its tenant's other objects:
 *
 * {prefix}tenants/{t}/evals/{evalId}/eval.json            the eval as started: its cases, every trial's run settings
 * {prefix}tenants/{t}/evals/{evalId}/trials/{index}.json  one trial's judged result, written once
 *
 * A trial's result is created once (conditional create): a retried judge adopts what is stored,
 * so a worker killed after judging never judges a trial twice.
 */
import type { S3Client } from "@aws-sdk/client-s3";
import { z } from "zod";
import type { RunSettings } from "../contracts/runs";
import { BoundedCache } from "../core/bounded-cache";
import { isValidId } from "../core/ids";
import { mapWithLimit } from "../store/bounded-map";
import { JsonObjects } from "../store/json-objects";
import { listKeys } from "../store/s3-requests";
import { EvalCheckSchema, EvalOriginSchema, type TrialPlan, type TrialResult } from "./types";

/** The eval as stored: what every trial runs. Settings are the core's, checked when it started. */
export interface StoredEval {
  evalId: string;
  tenantId: string;
  name?: string;
  createdAt: string;
  models: string[];
  repeat: number;
  concurrency: number;
  maxCostUsd?: number;
  cases: Array<{
    id: string;
    prompt: string;
    from?: z.infer<typeof EvalOriginSchema>;
    checks: z.infer<typeof EvalCheckSchema>[];
    /** The run settings of this case; a trial runs them with its own model (`trialSettings`). */
    settings: RunSettings;
  }>;
}

// The stored objects are Keel's own: parsed for their shape, their settings passed through.
const StoredEvalSchema = z
  .object({
    evalId: z.string(),
    tenantId: z.string(),
    name: z.string().optional(),
    createdAt: z.string(),
    models: z.array(z.string()),
    repeat: z.number(),
    concurrency: z.number(),
    maxCostUsd: z.number().optional(),
    cases: z.array(
      z.object({
        id: z.string(),
        prompt: z.string(),
        from: EvalOriginSchema.optional(),
        checks: z.array(EvalCheckSchema),
        settings: z.custom<RunSettings>((value) => typeof value === "object" && value !== null),
      }),
    ),
  })
  .transform((value) => value as StoredEval);

const TrialResultSchema = z.custom<TrialResult>(
  (value) => typeof value === "object" && value !== null && typeof (value as TrialResult).index === "number",
);

/** Trials in index order: case by case, each case's models, each model's repeats. */
export function trialCount(stored: Pick<StoredEval, "cases" | "models" | "repeat">): number {
  return stored.cases.length * stored.models.length * stored.repeat;
}

/** What trial `index` runs. */
export function trialPlan(stored: Pick<StoredEval, "cases" | "models" | "repeat">, index: number): TrialPlan {
  const perCase = stored.models.length * stored.repeat;
  const caseIndex = Math.floor(index / perCase);
  const modelIndex = Math.floor((index % perCase) / stored.repeat);
  const evalCase = stored.cases[caseIndex];
  const model = stored.models[modelIndex];
  if (!evalCase || model === undefined) throw new RangeError(`no trial ${index} in this eval`);
  return { index, caseId: evalCase.id, model, repeat: index % stored.repeat };
}

/** What trial `index` runs: its case, and the case's settings with the trial's model. */
export function trialRun(stored: StoredEval, index: number) {
  const plan = trialPlan(stored, index);
  const evalCase = stored.cases.find((candidate) => candidate.id === plan.caseId);
  if (!evalCase) throw new RangeError(`no case ${plan.caseId} in this eval`);
  return { plan, evalCase, settings: { ...evalCase.settings, model: plan.model } };
}

/** The session a trial runs in: the eval's id and the trial's index (the eval's sessions group together). */
export function trialSessionId(evalId: string, index: number): string {
  return `${evalId}-t${index}`;
}

/** Evals a process keeps read (an eval never changes once stored; a large one is megabytes). */
const CACHED_EVALS = 16;

export class EvalStore {
  private readonly objects: JsonObjects;
  private readonly cache = new BoundedCache<string, StoredEval | undefined>({ capacity: CACHED_EVALS });

  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    private readonly prefix: string,
  ) {
    this.objects = new JsonObjects(s3, bucket, prefix);
  }

  private folder(tenantId: string, evalId?: string): string {
    return `${this.prefix}tenants/${tenantId}/evals/${evalId === undefined ? "" : `${evalId}/`}`;
  }

  /** Stores a new eval; false when one of that id exists. */
  create(stored: StoredEval): Promise<boolean> {
    return this.objects.createIfAbsent(`${this.folder(stored.tenantId, stored.evalId)}eval.json`, stored);
  }

  /** The eval (read once per process: it never changes once stored); undefined when there is none. */
  async get(tenantId: string, evalId: string): Promise<StoredEval | undefined> {
    if (!isValidId(evalId)) return undefined;
    const key = `${this.folder(tenantId, evalId)}eval.json`;
    const found = await this.cache.getOrLoad(key, () => this.objects.read(key, StoredEvalSchema));
    // An absent eval is asked again next time (it may be stored by then).
    if (!found) this.cache.delete(key);
    return found;
  }

  /** Stores a trial's result unless one is stored; returns the stored one, and whether this call wrote it. */
  async putTrial(
    tenantId: string,
    evalId: string,
    result: TrialResult,
  ): Promise<{ result: TrialResult; written: boolean }> {
    const key = `${this.folder(tenantId, evalId)}trials/${result.index}.json`;
    if (await this.objects.createIfAbsent(key, result)) return { result, written: true };
    const stored = await this.objects.read(key, TrialResultSchema);
    if (!stored) throw new Error(`the trial result ${key} was refused as present and then not found`);
    return { result: stored, written: false };
  }

  getTrial(tenantId: string, evalId: string, index: number): Promise<TrialResult | undefined> {
    return this.objects.read(`${this.folder(tenantId, evalId)}trials/${index}.json`, TrialResultSchema);
  }

  /** Every stored trial result of the eval, in index order (one LIST, then the GETs). */
  async trials(tenantId: string, evalId: string): Promise<TrialResult[]> {
    const folder = `${this.folder(tenantId, evalId)}trials/`;
    const indices = (await this.keys(folder))
      .map((key) => Number(key.slice(folder.length).replace(/\.json$/, "")))
      .filter(Number.isInteger)
      .sort((a, b) => a - b);
    const found = await mapWithLimit(indices, 16, (index) => this.getTrial(tenantId, evalId, index));
    return found.filter((trial) => trial !== undefined);
  }

  /** The tenant's evals, newest first. */
  async list(tenantId: string, limit = 50): Promise<StoredEval[]> {
    const folder = this.folder(tenantId);
    const ids = (await this.keys(folder, "/"))
      .map((prefix) => prefix.slice(folder.length).replace(/\/$/, ""))
      .filter(isValidId);
    const found = await mapWithLimit(ids, 16, (evalId) => this.get(tenantId, evalId));
    return found
      .filter((stored) => stored !== undefined)
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt))
      .slice(0, limit);
  }

  private keys(folder: string, delimiter?: string): Promise<string[]> {
    return listKeys(this.s3, this.bucket, folder, delimiter);
  }
}
