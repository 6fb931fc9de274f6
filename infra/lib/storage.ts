/**
 * The session bucket and the least-privilege grants on it. Grants name explicit actions on the
 * configured prefix only: no `s3:*`, no `s3:Delete*` except where a component must remove its own
 * short-lived records.
 */
import { Duration, RemovalPolicy } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import * as s3 from "aws-cdk-lib/aws-s3";
import { Construct } from "constructs";
import type { KeelInfraConfig } from "./config";

/** Folders under the Keel prefix; `src/store/session-keys.ts` and `src/api/idempotency.ts` own the layouts. */
export const SESSIONS_FOLDER = "tenants/";
const PAYLOADS_FOLDER = "payloads/";
export const IDEMPOTENCY_FOLDER = "idempotency/";
/** Runner tokens by digest (src/environments/store.ts); the API removes them when revoked. */
export const RUNNER_TOKENS_FOLDER = "runner-tokens/";
/** Chat integration records (Slack threads and handled events). */
export const INTEGRATIONS_FOLDER = "integrations/";
/** Idempotency records only matter while clients retry. */
const IDEMPOTENCY_RECORD_DAYS = 2;
const ABORTED_UPLOAD_DAYS = 1;

export interface SessionBucketProps {
  storage: KeelInfraConfig["storage"];
  production: boolean;
}

export interface SessionAccess {
  /** Everything under the prefix may be listed and read. */
  read: true;
  /** Objects may be created and overwritten (never deleted) under the prefix. */
  write: boolean;
  /** Folders (relative to the prefix) whose objects this grantee may also delete. */
  deleteFolders?: string[];
}

export class SessionBucket extends Construct {
  readonly bucket: s3.Bucket;
  readonly prefix: string;
  readonly encryptionKey?: kms.IKey;

  constructor(scope: Construct, id: string, props: SessionBucketProps) {
    super(scope, id);
    const { storage, production } = props;
    this.prefix = storage.prefix;
    this.encryptionKey = storage.kmsKeyArn ? kms.Key.fromKeyArn(this, "Key", storage.kmsKeyArn) : undefined;
    const lifecycleRules: s3.LifecycleRule[] = [
      {
        id: "abort-incomplete-uploads",
        abortIncompleteMultipartUploadAfter: Duration.days(ABORTED_UPLOAD_DAYS),
      },
      {
        id: "payloads-expire",
        prefix: `${this.prefix}${PAYLOADS_FOLDER}`,
        expiration: Duration.days(storage.payloadExpirationDays),
      },
      {
        id: "idempotency-records-expire",
        prefix: `${this.prefix}${IDEMPOTENCY_FOLDER}`,
        expiration: Duration.days(IDEMPOTENCY_RECORD_DAYS),
      },
      {
        // Everything of a session lives in its folder: entries, chunks, markers and the
        // workspace snapshots (workspace/blobs, workspace/trees, workspace/snapshots).
        id: "sessions-intelligent-tiering",
        prefix: `${this.prefix}${SESSIONS_FOLDER}`,
        transitions: [
          {
            storageClass: s3.StorageClass.INTELLIGENT_TIERING,
            transitionAfter: Duration.days(storage.sessionTieringDays),
          },
        ],
      },
    ];
    if (storage.versioned) {
      lifecycleRules.push({
        id: "noncurrent-versions-expire",
        noncurrentVersionExpiration: Duration.days(storage.noncurrentVersionExpirationDays),
        // A deleted session leaves delete markers; once its old versions expired, they go too.
        expiredObjectDeleteMarker: true,
      });
    }
    this.bucket = new s3.Bucket(this, "Bucket", {
      bucketName: storage.bucketName,
      encryption: this.encryptionKey ? s3.BucketEncryption.KMS : s3.BucketEncryption.S3_MANAGED,
      encryptionKey: this.encryptionKey,
      bucketKeyEnabled: this.encryptionKey ? true : undefined,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      versioned: storage.versioned,
      lifecycleRules,
      removalPolicy: production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
      autoDeleteObjects: !production,
    });
  }

  /** Grants exactly the S3 (and KMS) actions `access` describes, on the Keel prefix only. */
  grantSessionAccess(grantee: iam.IGrantable, access: SessionAccess): void {
    const principal = grantee.grantPrincipal;
    principal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: "ListKeelPrefix",
        actions: ["s3:ListBucket"],
        resources: [this.bucket.bucketArn],
        conditions: { StringLike: { "s3:prefix": [`${this.prefix}*`] } },
      }),
    );
    principal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: access.write ? "ReadWriteKeelObjects" : "ReadKeelObjects",
        actions: access.write ? ["s3:GetObject", "s3:PutObject"] : ["s3:GetObject"],
        resources: [this.bucket.arnForObjects(`${this.prefix}*`)],
      }),
    );
    const deleteFolders = access.deleteFolders ?? [];
    if (deleteFolders.length > 0) {
      principal.addToPrincipalPolicy(
        new iam.PolicyStatement({
          sid: "DeleteOwnRecords",
          actions: ["s3:DeleteObject"],
          resources: deleteFolders.map((folder) => this.bucket.arnForObjects(`${this.prefix}${folder}*`)),
        }),
      );
    }
    if (this.encryptionKey) {
      const keyActions = access.write ? ["kms:Decrypt", "kms:GenerateDataKey"] : ["kms:Decrypt"];
      principal.addToPrincipalPolicy(
        new iam.PolicyStatement({ actions: keyActions, resources: [this.encryptionKey.keyArn] }),
      );
    }
  }
}
