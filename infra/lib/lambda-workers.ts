/**
 * Workers as Temporal serverless workers on Lambda: Temporal invokes a published version of the
 * function (the version registered for a build id, never `$LATEST`) by assuming a role in this
 * account with an external id. Each invocation polls until shortly before its deadline.
 */
import { join } from "node:path";
import { Duration, RemovalPolicy, Size } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import * as nodejs from "aws-cdk-lib/aws-lambda-nodejs";
import { Construct } from "constructs";
import { type KeelInfraConfig, LAMBDA_MAX_TIMEOUT_MINUTES, type LambdaWorkersConfig } from "./config";
import {
  keelEnvironment,
  keelFunctionDefaults,
  keelLogGroup,
  localBundling,
  providerEnvironment,
  REPO_ROOT,
  sandboxEnvironment,
} from "./runtime";
import { type SecretBinding, secretArnEnvironment } from "./secrets";
import type { SessionBucket } from "./storage";

export const LAMBDA_WORKER_ENTRY = "src/worker/lambda.ts";
/** File name of the prebuilt workflow bundle inside the function's package. */
const WORKFLOW_BUNDLE_FILE = "workflow-bundle.js";
/** The same bundle with the tracing interceptors, loaded when KEEL_OTEL_ENDPOINT is set. */
const TRACED_WORKFLOW_BUNDLE_FILE = "workflow-bundle.traced.js";
/** Lambda's writable storage: workspaces live for as long as the execution environment. */
const LAMBDA_WORKSPACE_ROOT = "/tmp/keel/workspaces";
/** The native Temporal core for Lambda's arm64 Linux. */
const CORE_BRIDGE_TARGET = "aarch64-unknown-linux-gnu";
/**
 * Packages loaded from node_modules rather than bundled: the worker loads files of its own package
 * at run time (workflow thread, native core), and every `@temporalio/*` package must be one copy.
 */
export const EXTERNAL_PACKAGES = ["@temporalio/*"];

export interface LambdaWorkersProps {
  config: KeelInfraConfig;
  workers: LambdaWorkersConfig;
  storage: SessionBucket;
  secrets: SecretBinding[];
  region: string;
  /** Skips the workflow bundle and node_modules copy (template-only tests); never for deployment. */
  skipRuntimeFiles?: boolean;
}

export class LambdaWorkers extends Construct {
  readonly function: nodejs.NodejsFunction;
  readonly version: lambda.IVersion;
  readonly invokeRole: iam.Role;

  constructor(scope: Construct, id: string, props: LambdaWorkersProps) {
    super(scope, id);
    const { config, workers, storage, secrets, region } = props;
    const tsx = join(REPO_ROOT, "node_modules/.bin/tsx");
    const bundlingScripts = join(REPO_ROOT, "infra/bundling");
    this.function = new nodejs.NodejsFunction(this, "Function", {
      ...keelFunctionDefaults(LAMBDA_WORKER_ENTRY),
      currentVersionOptions: { removalPolicy: RemovalPolicy.RETAIN },
      handler: "handler",
      memorySize: workers.memoryMiB,
      ephemeralStorageSize: Size.mebibytes(workers.ephemeralStorageMiB),
      // Activities are sized to fit (LLM 10 min, tools 15 min start-to-close).
      timeout: Duration.minutes(LAMBDA_MAX_TIMEOUT_MINUTES),
      reservedConcurrentExecutions: workers.reservedConcurrency,
      logGroup: keelLogGroup(this, "Logs", config),
      environment: {
        ...keelEnvironment(config, storage, region),
        ...providerEnvironment(config),
        ...secretArnEnvironment(secrets),
        KEEL_WORKER_DEPLOYMENT_NAME: workers.deploymentName,
        KEEL_WORKER_BUILD_ID: workers.buildId,
        KEEL_WORKFLOW_BUNDLE: `/var/task/${WORKFLOW_BUNDLE_FILE}`,
        KEEL_WORKFLOW_BUNDLE_TRACED: `/var/task/${TRACED_WORKFLOW_BUNDLE_FILE}`,
        KEEL_WORKSPACE_ROOT: LAMBDA_WORKSPACE_ROOT,
        // Lambda cannot create user namespaces: no bubblewrap sandbox there, so the function
        // serves the deployment's declared tenant only (docs/deploy.md).
        ...sandboxEnvironment(config),
      },
      bundling: localBundling({
        externalModules: EXTERNAL_PACKAGES,
        commandHooks: {
          beforeBundling: () => [],
          beforeInstall: () => [],
          afterBundling: (_inputDir: string, outputDir: string) =>
            props.skipRuntimeFiles
              ? []
              : [
                  `"${tsx}" "${bundlingScripts}/bundle-workflows.ts" "${outputDir}/${WORKFLOW_BUNDLE_FILE}"`,
                  `"${tsx}" "${bundlingScripts}/bundle-workflows.ts" --traced "${outputDir}/${TRACED_WORKFLOW_BUNDLE_FILE}"`,
                  `"${tsx}" "${bundlingScripts}/copy-runtime-modules.ts" "${outputDir}" ${CORE_BRIDGE_TARGET}`,
                ],
        },
      }),
    });
    for (const { secret } of secrets) secret.grantRead(this.function);
    storage.grantSessionAccess(this.function, { read: true, write: true });

    // Each change of code or configuration publishes a new version; earlier versions are kept,
    // because Temporal keeps invoking the version registered for a build id until it is drained.
    this.version = this.function.currentVersion;
    this.invokeRole = new iam.Role(this, "TemporalInvokeRole", {
      description: "Assumed by Temporal to invoke published versions of the Keel worker",
      assumedBy: new iam.ArnPrincipal(workers.temporalPrincipalArn).withConditions({
        StringEquals: { "sts:ExternalId": workers.externalId },
      }),
      maxSessionDuration: Duration.hours(1),
    });
    // Published versions only: the unqualified ARN does not match `:*`, and `$LATEST` is denied.
    this.invokeRole.addToPolicy(
      new iam.PolicyStatement({
        actions: ["lambda:InvokeFunction"],
        resources: [`${this.function.functionArn}:*`],
      }),
    );
    this.invokeRole.addToPolicy(
      new iam.PolicyStatement({
        effect: iam.Effect.DENY,
        actions: ["lambda:InvokeFunction"],
        resources: [`${this.function.functionArn}:$LATEST`],
      }),
    );
  }
}
