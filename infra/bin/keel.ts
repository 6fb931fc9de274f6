/**
 * The CDK app. The config file comes from `-c config=<path>` (relative to infra/), defaulting to
 * `config/example.json` (ECS workers); `config/example-lambda.json` deploys Lambda workers.
 */
import { resolve } from "node:path";
import { App } from "aws-cdk-lib";
import { loadInfraConfig } from "../lib/config";
import { KeelStack, stackNameFor } from "../lib/keel-stack";

const DEFAULT_CONFIG = "config/example.json";

const app = new App();
const config = loadInfraConfig(
  resolve(__dirname, "..", String(app.node.tryGetContext("config") ?? DEFAULT_CONFIG)),
);
new KeelStack(app, stackNameFor(config), { config });
app.synth();
