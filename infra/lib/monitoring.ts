/** Alarms on the API, the Lambda functions and the ECS workers, sent to one SNS topic. */
import { Duration } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as actions from "aws-cdk-lib/aws-cloudwatch-actions";
import type * as ecs from "aws-cdk-lib/aws-ecs";
import * as events from "aws-cdk-lib/aws-events";
import * as targets from "aws-cdk-lib/aws-events-targets";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import * as sns from "aws-cdk-lib/aws-sns";
import * as subscriptions from "aws-cdk-lib/aws-sns-subscriptions";
import { Construct } from "constructs";
import type { KeelApi } from "./api";

const PERIOD = Duration.minutes(5);
/** Server errors tolerated per period before alarming. */
const API_5XX_THRESHOLD = 5;
const LAMBDA_ERROR_THRESHOLD = 5;

export class KeelMonitoring extends Construct {
  readonly topic: sns.Topic;
  readonly alarms: cloudwatch.Alarm[] = [];

  constructor(scope: Construct, id: string, props: { alarmEmail?: string }) {
    super(scope, id);
    this.topic = new sns.Topic(this, "Alarms", { displayName: "Keel alarms", enforceSSL: true });
    if (props.alarmEmail) this.topic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
  }

  watchApi(api: KeelApi): void {
    this.add(
      "Api5xx",
      api.httpApi.metricServerError({ period: PERIOD, statistic: "Sum" }),
      API_5XX_THRESHOLD,
      "Keel API answered 5xx",
    );
    this.watchFunction("ApiFunction", api.function);
  }

  watchFunction(id: string, fn: lambda.IFunction): void {
    this.add(
      `${id}Errors`,
      fn.metricErrors({ period: PERIOD, statistic: "Sum" }),
      LAMBDA_ERROR_THRESHOLD,
      `${id} errors`,
    );
    this.add(
      `${id}Throttles`,
      fn.metricThrottles({ period: PERIOD, statistic: "Sum" }),
      1,
      `${id} throttled`,
    );
  }

  /** Tasks that stop on their own (crash, failed start) and a service below its desired count. */
  watchEcsService(cluster: ecs.ICluster, service: ecs.BaseService, minCount: number): void {
    const failures = new events.Rule(this, "WorkerTaskFailures", {
      description: "Keel worker tasks that exited or failed to start",
      eventPattern: {
        source: ["aws.ecs"],
        detailType: ["ECS Task State Change"],
        detail: {
          clusterArn: [cluster.clusterArn],
          lastStatus: ["STOPPED"],
          stopCode: ["EssentialContainerExited", "TaskFailedToStart"],
        },
      },
      targets: [new targets.SnsTopic(this.topic)],
    });
    this.add(
      "WorkerTaskFailuresAlarm",
      new cloudwatch.Metric({
        namespace: "AWS/Events",
        metricName: "TriggeredRules",
        dimensionsMap: { RuleName: failures.ruleName },
        period: PERIOD,
        statistic: "Sum",
      }),
      1,
      "Keel worker tasks stopped unexpectedly",
    );
    const running = new cloudwatch.Metric({
      namespace: "ECS/ContainerInsights",
      metricName: "RunningTaskCount",
      dimensionsMap: { ClusterName: cluster.clusterName, ServiceName: service.serviceName },
      period: PERIOD,
      statistic: "Minimum",
    });
    const alarm = new cloudwatch.Alarm(this, "WorkersBelowMinimum", {
      metric: running,
      threshold: minCount,
      comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
      evaluationPeriods: 2,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
      alarmDescription: "Fewer Keel worker tasks running than the configured minimum (unhealthy service)",
    });
    alarm.addAlarmAction(new actions.SnsAction(this.topic));
    this.alarms.push(alarm);
  }

  private add(id: string, metric: cloudwatch.IMetric, threshold: number, description: string): void {
    const alarm = new cloudwatch.Alarm(this, id, {
      metric,
      threshold,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      alarmDescription: description,
    });
    alarm.addAlarmAction(new actions.SnsAction(this.topic));
    this.alarms.push(alarm);
  }
}
