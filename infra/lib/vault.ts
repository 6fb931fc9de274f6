/**
 * The tenant secrets' KMS key (docs/deploy.md, "Tenant secrets"): it wraps each tenant's data key
 * (src/vault/key-wrapper.ts: GenerateDataKey and Decrypt with the encryption context
 * `keel:tenant`). Only the API and the workers may use it, and only with that context; nobody is
 * granted Encrypt, ReEncrypt or the key's administration through it. The key rotates yearly
 * (KMS keeps the old material, so stored data keys stay readable).
 */
import { RemovalPolicy } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import { Construct } from "constructs";

/** The setting the API and the workers read (src/vault/settings.ts). */
const VAULT_KMS_KEY_SETTING = "KEEL_VAULT_KMS_KEY_ID";
/** The encryption context key every data key is made and unwrapped with. */
const TENANT_CONTEXT_KEY = "keel:tenant";

export interface VaultKeyProps {
  environment: string;
  production: boolean;
}

export class VaultKey extends Construct {
  readonly key: kms.Key;

  constructor(scope: Construct, id: string, props: VaultKeyProps) {
    super(scope, id);
    this.key = new kms.Key(this, "Key", {
      description: `Keel tenant secrets: wraps each tenant's data key (${props.environment})`,
      enableKeyRotation: true,
      // Deleting it makes every stored secret unreadable: kept when the stack goes, in production.
      removalPolicy: props.production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
  }

  /** What the API and the workers are given: the key's ARN as KEEL_VAULT_KMS_KEY_ID. */
  environment(): Record<string, string> {
    return { [VAULT_KMS_KEY_SETTING]: this.key.keyArn };
  }

  /**
   * GenerateDataKey and Decrypt on this key, only with a `keel:tenant` encryption context (the
   * key's policy lets the account's IAM policies grant it, CDK's default).
   */
  grantUse(grantee: iam.IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ["kms:GenerateDataKey", "kms:Decrypt"],
        resources: [this.key.keyArn],
        conditions: { StringLike: { [`kms:EncryptionContext:${TENANT_CONTEXT_KEY}`]: "*" } },
      }),
    );
  }
}
