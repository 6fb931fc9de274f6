/** `keel dev`'s vault key: made once in the data folder, owner-only, kept; the caller's setting wins. */
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { devVaultEnv } from "../../../src/cli/devstack/vault-key";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "keel-dev-vault-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test("a key file is made once, mode 0600, 32 bytes of base64, and kept across starts", () => {
  const first = devVaultEnv({}, dir);
  expect(first).toEqual({ KEEL_VAULT_KEY_FILE: join(dir, "vault.key") });
  const path = join(dir, "vault.key");
  const text = readFileSync(path, "utf8");
  expect(Buffer.from(text.trim(), "base64")).toHaveLength(32);
  expect(statSync(path).mode & 0o777).toBe(0o600);
  expect(devVaultEnv({}, dir)).toEqual(first);
  expect(readFileSync(path, "utf8")).toBe(text);
});

test("the caller's KEEL_VAULT_KMS_KEY_ID or KEEL_VAULT_KEY_FILE is used instead", () => {
  expect(devVaultEnv({ KEEL_VAULT_KMS_KEY_ID: "alias/k" }, dir)).toEqual({
    KEEL_VAULT_KMS_KEY_ID: "alias/k",
  });
  expect(devVaultEnv({ KEEL_VAULT_KEY_FILE: "/etc/k" }, dir)).toEqual({ KEEL_VAULT_KEY_FILE: "/etc/k" });
});
