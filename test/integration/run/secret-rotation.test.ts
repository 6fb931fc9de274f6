/**
 * A call's tenant secrets as a worker resolves them (tool-calls/call-secrets.ts, what
 * `executeTool` and a runner's claim do before the call's start marker), through the bash tool and
 * its egress proxy to a local HTTPS server standing in for the bound host: a rotated value is the
 * one the next call sends, a deleted secret's next call sends its worthless placeholder and ends
 * with the notice, and a vault that fails stops the call with an error that names the secret,
 * never a value. (The bound host is reached through the proxy's test resolver, which a worker
 * process has no setting for: this is the worker's resolution and sandbox policy, in process.)
 */
import { randomBytes } from "node:crypto";
import { SecretStore } from "../../../src/tenants/secrets";
import { resolveCallSecrets, SecretsUnavailableError } from "../../../src/tool-calls/call-secrets";
import {
  DEFAULT_SANDBOX_POLICY,
  findExecutable,
  probeSandbox,
  type SandboxPolicy,
} from "../../../src/tools/sandbox";
import { LocalKeyWrapper } from "../../../src/vault/key-wrapper";
import { type HttpsStandIn, startHttpsStandIn } from "../../support/https-stand-in";
import { s3Client, s3Settings, uniqueName } from "../../support/integration-env";
import { makeSandbox, removeSandbox, type Sandbox, textOf } from "../../unit/tools/helpers";

const canRun = probeSandbox().ok && findExecutable("socat") !== undefined;
const maybe = canRun ? describe : describe.skip;

maybe("a call's secrets, resolved fresh by the worker", () => {
  const s3 = s3Client();
  const vault = new SecretStore(s3, s3Settings(), new LocalKeyWrapper(randomBytes(32)));
  const tenant = uniqueName("tenant");
  /** The Authorization header of each request the stand-in received. */
  const received: string[] = [];
  let standIn: HttpsStandIn;
  let port: number;
  let sandbox: Sandbox;
  let egressOptions: SandboxPolicy["egressOptions"];

  beforeAll(async () => {
    standIn = await startHttpsStandIn((request, response) => {
      received.push(request.headers.authorization ?? "");
      response.end("stand-in says hi\n");
    });
    port = standIn.port;
    egressOptions = {
      resolve: async (host) => {
        if (!host.endsWith(".test")) throw new Error("ENOTFOUND");
        return ["127.0.0.1"];
      },
      isAllowedAddress: (address) => address === "127.0.0.1",
      extraCaPem: standIn.caPem,
    };
    sandbox = await makeSandbox();
  });
  afterAll(async () => {
    await removeSandbox(sandbox);
    await standIn.close();
    s3.destroy();
  });

  /** One call as the worker makes it: the run's names resolved now, then bash with them. */
  async function call(): Promise<string> {
    const secrets = await resolveCallSecrets(vault, tenant, ["ROTATED"]);
    sandbox.ctx.sandbox = { ...DEFAULT_SANDBOX_POLICY, network: "none", ...secrets, egressOptions };
    return textOf(
      await sandbox.run("bash", {
        command: `curl -sS -m 20 -H "Authorization: Bearer $ROTATED" https://api.bound.test:${port}/`,
        timeout: 60,
      }),
    );
  }

  test("a rotation is used by the next call; a deletion stops the value there", async () => {
    const binding = { name: "ROTATED", hosts: [`api.bound.test:${port}`], in: ["header" as const] };
    const first = `v1-${randomBytes(8).toString("hex")}`;
    const second = `v2-${randomBytes(8).toString("hex")}`;
    await vault.set(tenant, binding, first);
    expect(await call()).toContain("stand-in says hi");
    await vault.set(tenant, binding, second);
    const rotated = await call();
    expect(rotated).toContain("stand-in says hi");
    expect(received).toEqual([`Bearer ${first}`, `Bearer ${second}`]);
    expect(rotated).not.toContain(first);
    expect(rotated).not.toContain(second);

    await vault.delete(tenant, "ROTATED");
    const deleted = await call();
    // The host is no longer on the call's list (no secret binds it): nothing reaches it.
    expect(received).toHaveLength(2);
    expect(deleted.trimEnd().endsWith("[secrets: ROTATED is not set for this tenant]")).toBe(true);
  });

  test("a vault that fails stops the call: the error names the secret, never a value", async () => {
    const failing = {
      resolve: async () => {
        throw new Error("S3 is down (503)");
      },
    };
    const refused = resolveCallSecrets(failing, tenant, ["ROTATED"]);
    await expect(refused).rejects.toBeInstanceOf(SecretsUnavailableError);
    await expect(refused).rejects.toThrow(
      "The tenant secrets this call names (ROTATED) could not be read: Error: S3 is down (503); the call was not run and is tried again.",
    );
  });
});
