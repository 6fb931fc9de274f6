/**
 * network "full" is the worker's own network: the API refuses it (400 naming the setting where no tenant may use it, 403 for a tenant the setting does not list) unless
 * the operator enabled it for the tenant with KEEL_SANDBOX_NETWORK_FULL. Checked on the real app;
 * a run client that records deliveries stands in for Temporal.
 */
import { createHash } from "node:crypto";
import { createApp } from "../../../src/api/app";
import { apiConfigFromEnv } from "../../../src/api/config";
import type { ApiDependencies } from "../../../src/api/route-context";
import type { RunSettings } from "../../../src/contracts/runs";
import { loadCatalog } from "../../../src/providers/models";
import type { RunClient } from "../../../src/run-client/run-client";
import type { JsonObjects } from "../../../src/store/json-objects";
import type { SessionStore } from "../../../src/store/session-store";
import type { WorkspaceSnapshots } from "../../../src/store/workspace-snapshots";
import { type FullNetworkAccess, parseFullNetworkAccess } from "../../../src/tools/network-access";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const KEYS = { alpha: "alpha-key", beta: "beta-key" };

function appWith(fullNetwork: FullNetworkAccess | undefined) {
  const delivered: RunSettings[] = [];
  const runs = {
    deliver: async (_ref: unknown, _message: unknown, settings: RunSettings) => {
      delivered.push(settings);
      return { runId: "r", workflowId: "w", delivery: "started" };
    },
  } as unknown as RunClient;
  const dependencies: ApiDependencies = {
    config: {
      apiKeys: { [sha256(KEYS.alpha)]: "alpha", [sha256(KEYS.beta)]: "beta" },
      bodyLimitBytes: 64 * 1024,
      allowDirectoryWorkspaces: false,
      ...(fullNetwork !== undefined ? { fullNetwork } : {}),
      sseMaxSeconds: 0,
      defaultModel: "local-chat",
    },
    runs: async () => runs,
    // The message route reads neither before delivering.
    store: {} as SessionStore,
    snapshots: {} as WorkspaceSnapshots,
    objects: {} as JsonObjects,
    catalog: loadCatalog(),
  };
  const app = createApp(dependencies);
  const post = async (key: string, network: string) => {
    const response = await app.request("/v1/sessions/s1/messages", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ text: "hi", network }),
    });
    return { status: response.status, body: (await response.json()) as { detail?: string } };
  };
  return { post, delivered };
}

describe('network "full" at the API', () => {
  test("refused with a 400 naming the setting when not configured, and nothing is delivered", async () => {
    const { post, delivered } = appWith(undefined);
    const answer = await post(KEYS.alpha, "full");
    expect(answer.status).toBe(400);
    expect(answer.body.detail).toContain("KEEL_SANDBOX_NETWORK_FULL");
    expect(delivered).toEqual([]);
    expect((await post(KEYS.alpha, "none")).status).toBe(202);
  });

  test("allowed for every tenant with on, for the listed tenants with a list", async () => {
    const on = appWith("on");
    expect((await on.post(KEYS.beta, "full")).status).toBe(202);
    expect(on.delivered[0]?.network).toBe("full");

    const listed = appWith({ tenants: ["alpha"] });
    expect((await listed.post(KEYS.alpha, "full")).status).toBe(202);
    expect((await listed.post(KEYS.beta, "full")).status).toBe(403);
    expect(listed.delivered).toHaveLength(1);
  });

  test("the setting: off by default, on, or tenant ids (anything else refused)", () => {
    const base = { KEEL_S3_BUCKET: "bucket" };
    expect(apiConfigFromEnv(base).fullNetwork).toBe("off");
    expect(apiConfigFromEnv({ ...base, KEEL_SANDBOX_NETWORK_FULL: "on" }).fullNetwork).toBe("on");
    expect(parseFullNetworkAccess(" alpha, beta ")).toEqual({ tenants: ["alpha", "beta"] });
    expect(() => parseFullNetworkAccess("yes please")).toThrow(/KEEL_SANDBOX_NETWORK_FULL/);
    expect(() => parseFullNetworkAccess("true")).toThrow(/use "on" or "off"/);
  });
});
