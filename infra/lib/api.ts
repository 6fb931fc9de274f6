/**
 * The HTTP API: API Gateway HTTP API (v2) → one Lambda function running the API app. Throttled at
 * the stage, access-logged as JSON, optionally behind a custom domain.
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { Duration } from "aws-cdk-lib";
import * as apigwv1 from "aws-cdk-lib/aws-apigateway";
import * as apigw from "aws-cdk-lib/aws-apigatewayv2";
import { HttpLambdaIntegration } from "aws-cdk-lib/aws-apigatewayv2-integrations";
import * as acm from "aws-cdk-lib/aws-certificatemanager";
import * as nodejs from "aws-cdk-lib/aws-lambda-nodejs";
import type * as logs from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import type { KeelInfraConfig } from "./config";
import {
  keelEnvironment,
  keelFunctionDefaults,
  keelLogGroup,
  localBundling,
  REPO_ROOT,
  tenancyEnvironment,
} from "./runtime";
import { type SecretBinding, secretArnEnvironment } from "./secrets";
import {
  IDEMPOTENCY_FOLDER,
  INTEGRATIONS_FOLDER,
  RUNNER_TOKENS_FOLDER,
  SESSIONS_FOLDER,
  type SessionBucket,
} from "./storage";

/** Server-sent event streams end before API Gateway's 30-second integration limit. */
const SSE_MAX_SECONDS_BEHIND_GATEWAY = 25;

export interface KeelApiProps {
  config: KeelInfraConfig;
  storage: SessionBucket;
  secrets: SecretBinding[];
  region: string;
}

export class KeelApi extends Construct {
  readonly function: nodejs.NodejsFunction;
  readonly httpApi: apigw.HttpApi;
  readonly stage: apigw.HttpStage;
  readonly accessLogs: logs.LogGroup;

  constructor(scope: Construct, id: string, props: KeelApiProps) {
    super(scope, id);
    const { config, storage, secrets, region } = props;
    const entry = resolve(REPO_ROOT, config.api.entry);
    if (!existsSync(entry)) throw new Error(`API Lambda entry ${entry} does not exist (config api.entry)`);

    this.function = new nodejs.NodejsFunction(this, "Function", {
      ...keelFunctionDefaults(config.api.entry),
      handler: "handler",
      memorySize: config.api.memoryMiB,
      timeout: Duration.seconds(config.api.timeoutSeconds),
      logGroup: keelLogGroup(this, "FunctionLogs", config),
      environment: {
        ...keelEnvironment(config, storage, region),
        ...secretArnEnvironment(secrets),
        ...tenancyEnvironment(config),
        KEEL_API_SSE_MAX_SECONDS: String(SSE_MAX_SECONDS_BEHIND_GATEWAY),
        ...(config.api.adminKeySha256?.length
          ? { KEEL_ADMIN_KEY_SHA256: config.api.adminKeySha256.join(",") }
          : {}),
      },
      bundling: localBundling(),
    });
    for (const { secret } of secrets) secret.grantRead(this.function);
    // Reads sessions for exports and state, writes imports and idempotency records; deletes its
    // own failed idempotency claims and Slack event claims, and the sessions a client deletes
    // (DELETE /v1/sessions/{id}: entries and workspace snapshots under tenants/, the session's
    // Slack thread record under integrations/). Workers never delete.
    storage.grantSessionAccess(this.function, {
      read: true,
      write: true,
      deleteFolders: [IDEMPOTENCY_FOLDER, SESSIONS_FOLDER, INTEGRATIONS_FOLDER, RUNNER_TOKENS_FOLDER],
    });

    this.httpApi = new apigw.HttpApi(this, "HttpApi", {
      description: `Keel API (${config.environment})`,
      createDefaultStage: false,
      defaultIntegration: new HttpLambdaIntegration("Integration", this.function),
    });
    this.accessLogs = keelLogGroup(this, "AccessLogs", config);
    const domain = config.api.domain
      ? new apigw.DomainName(this, "Domain", {
          domainName: config.api.domain.name,
          certificate: acm.Certificate.fromCertificateArn(
            this,
            "Certificate",
            config.api.domain.certificateArn,
          ),
        })
      : undefined;
    this.stage = new apigw.HttpStage(this, "Stage", {
      httpApi: this.httpApi,
      stageName: "$default",
      autoDeploy: true,
      throttle: { rateLimit: config.api.throttle.rateLimit, burstLimit: config.api.throttle.burstLimit },
      accessLogSettings: {
        destination: new apigw.LogGroupLogDestination(this.accessLogs),
        format: apigwv1.AccessLogFormat.custom(
          JSON.stringify({
            requestId: "$context.requestId",
            time: "$context.requestTime",
            method: "$context.httpMethod",
            path: "$context.path",
            status: "$context.status",
            latencyMs: "$context.responseLatency",
            integrationStatus: "$context.integrationStatus",
            integrationError: "$context.integrationErrorMessage",
            sourceIp: "$context.identity.sourceIp",
            userAgent: "$context.identity.userAgent",
          }),
        ),
      },
      ...(domain ? { domainMapping: { domainName: domain } } : {}),
    });
  }

  /** The URL clients use: the custom domain when configured. */
  url(config: KeelInfraConfig): string {
    return config.api.domain ? `https://${config.api.domain.name}/` : this.stage.url;
  }
}
