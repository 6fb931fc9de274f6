/**
 * Where model requests may go and which key each destination gets. The operator's provider keys
 * (OPENAI_API_KEY, ANTHROPIC_API_KEY) go only to the places the operator configured for them:
 * the family's base URL (OPENAI_BASE_URL / ANTHROPIC_BASE_URL, or the vendor's own API when
 * unset) and the base URLs of the model catalog's entries. A one-line model may also name a base
 * URL the operator listed in KEEL_MODEL_URLS; such a URL gets no operator key (only the
 * placeholder the SDKs insist on) unless its entry names the environment variable holding its
 * own key. Any other base URL is refused: by the API (400) and again by the worker.
 *
 * The hosts of all these URLs may resolve to internal addresses (a model server on the private
 * network is the operator's choice); every other host must resolve to public ones only (see
 * net/egress-policy.ts, applied to every connection, redirects included).
 */
import { type HostAllowance, normalizeHost } from "../net/egress-policy";
import { sdkBaseUrl } from "./model-spec";
import type { ModelApi, ModelInfo } from "./types";

/** The setting that lists the extra base URLs one-line models may name. */
export const MODEL_URLS_SETTING = "KEEL_MODEL_URLS";

export type Family = "openai" | "anthropic";

export const FAMILY_OF_API: Record<ModelApi, Family> = {
  "openai-completions": "openai",
  "openai-responses": "openai",
  "anthropic-messages": "anthropic",
};

/** The settings of each family's key and base URL. */
export const FAMILY_SETTINGS: Record<Family, { key: string; baseURL: string }> = {
  openai: { key: "OPENAI_API_KEY", baseURL: "OPENAI_BASE_URL" },
  anthropic: { key: "ANTHROPIC_API_KEY", baseURL: "ANTHROPIC_BASE_URL" },
};

/** Where the SDKs send requests when no base URL is configured. */
const VENDOR_BASE_URLS: Record<Family, string> = {
  openai: "https://api.openai.com/v1",
  anthropic: "https://api.anthropic.com",
};

/** One entry of KEEL_MODEL_URLS. */
export interface ModelUrlEntry {
  /** A base URL (http or https, without user info, query or fragment). */
  url: string;
  /** The environment variable holding the key sent to this URL; absent: no key is sent. */
  keyVariable?: string;
}

const ENTRY = /^(\S+)(?:\s+([A-Za-z_][A-Za-z0-9_]*))?$/;

/**
 * Parses KEEL_MODEL_URLS: comma-separated entries `<base URL>` or `<base URL> <KEY_VARIABLE>`.
 * Throws an error naming the setting and the bad entry (entries hold no secrets: keys are named,
 * never written in).
 */
export function parseModelUrls(text: string | undefined): ModelUrlEntry[] {
  if (!text?.trim()) return [];
  return text
    .split(",")
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      const match = ENTRY.exec(entry);
      const problem = match ? urlProblem(match[1]!) : "expected `<base URL>` or `<base URL> <KEY_VARIABLE>`";
      if (problem || !match) throw new Error(`${MODEL_URLS_SETTING}: ${JSON.stringify(entry)}: ${problem}`);
      return { url: match[1]!, ...(match[2] ? { keyVariable: match[2] } : {}) };
    });
}

function urlProblem(text: string): string | undefined {
  if (!URL.canParse(text)) return "not a URL";
  const url = new URL(text);
  if (url.protocol !== "http:" && url.protocol !== "https:") return "only http:// and https:// URLs";
  if (url.username || url.password || url.search || url.hash)
    return "no user info, query or fragment (name the key's variable after the URL instead)";
  return undefined;
}

/** Where a model's requests go, as the policy decided. */
export type ModelRoute =
  /** A place the operator configured for the family: the family's key. */
  | { kind: "operator" }
  /** A KEEL_MODEL_URLS entry: its own key, or none. */
  | { kind: "listed"; keyVariable?: string }
  | { kind: "refused"; message: string };

export interface ModelUrlPolicyOptions {
  allowlist: readonly ModelUrlEntry[];
  /** Each family's configured base URL; absent: the vendor's API. */
  configured: Partial<Record<Family, string>>;
  /** The operator's catalog; its entries' base URLs are configured places (read at each decision). */
  catalog?: () => Iterable<ModelInfo>;
}

/**
 * Whether `candidate` lies at or below `entry` for `api`: same scheme, host and port, and a path
 * at or under the entry's, both in the form the SDK uses (`sdkBaseUrl`: a path-less OpenAI URL
 * means `/v1`).
 */
export function covers(api: ModelApi, entry: string, candidate: string): boolean {
  if (!URL.canParse(entry) || !URL.canParse(candidate)) return false;
  const a = new URL(sdkBaseUrl(api, entry));
  const b = new URL(sdkBaseUrl(api, candidate));
  if (a.protocol !== b.protocol || a.host !== b.host) return false;
  const base = a.pathname.replace(/\/+$/, "");
  const path = b.pathname.replace(/\/+$/, "");
  return path === base || path.startsWith(`${base}/`);
}

function hostOf(url: string): string | undefined {
  return URL.canParse(url) ? normalizeHost(new URL(url).hostname) : undefined;
}

export class ModelUrlPolicy {
  constructor(private readonly options: ModelUrlPolicyOptions) {}

  /** Where `model`'s requests may go; a model without a base URL goes to its family's configured one. */
  route(model: Pick<ModelInfo, "api" | "baseUrl">): ModelRoute {
    const { baseUrl, api } = model;
    if (!baseUrl) return { kind: "operator" };
    const family = FAMILY_OF_API[api];
    const configured = this.options.configured[family] || VENDOR_BASE_URLS[family];
    if (covers(api, configured, baseUrl)) return { kind: "operator" };
    for (const entry of this.options.catalog?.() ?? []) {
      if (entry.baseUrl && FAMILY_OF_API[entry.api] === family && covers(api, entry.baseUrl, baseUrl))
        return { kind: "operator" };
    }
    const listed = this.options.allowlist.find((entry) => covers(api, entry.url, baseUrl));
    if (listed) return { kind: "listed", ...(listed.keyVariable ? { keyVariable: listed.keyVariable } : {}) };
    return {
      kind: "refused",
      message:
        `The base URL ${baseUrl} is not one this deployment sends model requests to. A one-line model may name ` +
        `${FAMILY_SETTINGS[family].baseURL}, the base URL of a catalog model (KEEL_MODELS_FILE), or a URL the ` +
        `operator lists in ${MODEL_URLS_SETTING} (on the API and the worker)`,
    };
  }

  /**
   * The base URLs a one-line model of `api` may name, each as the SDK would use it: a candidate at
   * or below one of them (same scheme, host and port; its path at or under theirs) is allowed.
   */
  baseUrls(api: ModelApi): string[] {
    const family = FAMILY_OF_API[api];
    const urls = [
      this.options.configured[family] || VENDOR_BASE_URLS[family],
      ...[...(this.options.catalog?.() ?? [])].flatMap((entry) =>
        entry.baseUrl && FAMILY_OF_API[entry.api] === family ? [entry.baseUrl] : [],
      ),
      ...this.options.allowlist.map((entry) => entry.url),
    ];
    return [...new Set(urls.filter((url) => URL.canParse(url)).map((url) => sdkBaseUrl(api, url)))];
  }

  /**
   * Hosts the operator named (configured base URLs, catalog base URLs, KEEL_MODEL_URLS): these may
   * resolve to internal addresses. The vendors' default APIs are not among them.
   */
  readonly allowsHost: HostAllowance = (host) => {
    const urls = [
      ...Object.values(this.options.configured),
      ...[...(this.options.catalog?.() ?? [])].map((entry) => entry.baseUrl),
      ...this.options.allowlist.map((entry) => entry.url),
    ];
    return urls.some((url) => url !== undefined && url !== "" && hostOf(url) === host);
  };
}

/** Each family's configured base URL from the environment (empty values count as unset). */
export function configuredBaseUrls(env: NodeJS.ProcessEnv): Partial<Record<Family, string>> {
  const urls: Partial<Record<Family, string>> = {};
  for (const family of Object.keys(FAMILY_SETTINGS) as Family[]) {
    const value = env[FAMILY_SETTINGS[family].baseURL];
    if (value) urls[family] = value;
  }
  return urls;
}
