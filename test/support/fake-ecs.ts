/**
 * A stand-in for the ECS API on a local port: it speaks ECS's JSON protocol (awsJson1_1,
 * `X-Amz-Target: AmazonEC2ContainerServiceV20141113.<Operation>`) for RunTask (idempotent by
 * clientToken), ListTasks, DescribeTasks and StopTask, keeps tasks in memory, and records every
 * request. What real ECS does with the requests is this stand-in's guess.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeTask {
  taskArn: string;
  startedBy?: string;
  clientToken?: string;
  lastStatus: "PENDING" | "RUNNING" | "STOPPED";
  desiredStatus: "RUNNING" | "STOPPED";
}

export interface Received {
  operation: string;
  body: Record<string, unknown>;
  raw: string;
}

/** An in-memory ECS: RunTask (idempotent by clientToken), ListTasks, DescribeTasks, StopTask. */
export class FakeEcs {
  readonly received: Received[] = [];
  readonly tasks = new Map<string, FakeTask>();
  /** Answers the next RunTask with a 500 after starting its task (an answer lost on the way). */
  failNextRunTaskAnswer = false;
  /** ListTasks lists nothing (it is eventually consistent: a task just started may be missing). */
  listTasksLags = false;
  /** Answers DescribeTasks with this failure for every task. */
  describeFailure?: string;
  /** Answers RunTask with this failure and no task. */
  runTaskFailure?: string;
  private server?: Server;
  private next = 0;

  /**
   * `onRun` is called for each new task with its RunTask request (to start something that plays
   * it), `onStop` when StopTask stops one.
   */
  constructor(
    private readonly hooks: {
      onRun?: (task: FakeTask, request: Record<string, unknown>) => void;
      onStop?: (task: FakeTask) => void;
    } = {},
  ) {}

  async start(): Promise<string> {
    const server = createServer((request, response) => {
      void this.handle(request).then(({ status, body }) => {
        response.writeHead(status, { "content-type": "application/x-amz-json-1.1" });
        response.end(JSON.stringify(body));
      });
    });
    this.server = server;
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    await new Promise((done) => this.server?.close(done));
  }

  calls(operation: string): Received[] {
    return this.received.filter((call) => call.operation === operation);
  }

  private async handle(request: IncomingMessage): Promise<{ status: number; body: unknown }> {
    let raw = "";
    for await (const chunk of request) raw += chunk;
    const target = String(request.headers["x-amz-target"] ?? "");
    const [service, operation = ""] = target.split(".");
    if (service !== "AmazonEC2ContainerServiceV20141113")
      return { status: 400, body: { __type: "UnknownOperationException" } };
    const body = JSON.parse(raw) as Record<string, unknown>;
    this.received.push({ operation, body, raw });
    switch (operation) {
      case "RunTask":
        return this.runTask(body);
      case "ListTasks": {
        if (this.listTasksLags) return { status: 200, body: { taskArns: [] } };
        const arns = [...this.tasks.values()]
          .filter((task) => task.startedBy === body.startedBy && task.desiredStatus === body.desiredStatus)
          .map((task) => task.taskArn);
        return { status: 200, body: { taskArns: arns } };
      }
      case "DescribeTasks": {
        const asked = body.tasks as string[];
        if (this.describeFailure)
          return {
            status: 200,
            body: { tasks: [], failures: asked.map((arn) => ({ arn, reason: this.describeFailure })) },
          };
        const found = asked.map((arn) => this.tasks.get(arn)).filter((task) => task !== undefined);
        const missing = asked.filter((arn) => !this.tasks.has(arn));
        return {
          status: 200,
          body: { tasks: found, failures: missing.map((arn) => ({ arn, reason: "MISSING" })) },
        };
      }
      case "StopTask": {
        const task = this.tasks.get(body.task as string);
        if (!task) return { status: 400, body: { __type: "InvalidParameterException", message: "no task" } };
        const running = task.lastStatus !== "STOPPED";
        task.desiredStatus = "STOPPED";
        task.lastStatus = "STOPPED";
        if (running) this.hooks.onStop?.(task);
        return { status: 200, body: { task } };
      }
      default:
        return { status: 400, body: { __type: "UnknownOperationException" } };
    }
  }

  private runTask(body: Record<string, unknown>): { status: number; body: unknown } {
    if (this.runTaskFailure)
      return { status: 200, body: { tasks: [], failures: [{ reason: this.runTaskFailure }] } };
    let task = [...this.tasks.values()].find((known) => known.clientToken === body.clientToken);
    if (!task) {
      task = {
        taskArn: `arn:aws:ecs:us-east-1:123456789012:task/keel/${++this.next}`,
        startedBy: body.startedBy as string,
        clientToken: body.clientToken as string,
        lastStatus: "PENDING",
        desiredStatus: "RUNNING",
      };
      this.tasks.set(task.taskArn, task);
      this.hooks.onRun?.(task, body);
    }
    if (this.failNextRunTaskAnswer) {
      this.failNextRunTaskAnswer = false;
      return { status: 500, body: { __type: "ServerException", message: "answer lost" } };
    }
    return { status: 200, body: { tasks: [task], failures: [] } };
  }

  /** The runner exited (idle, or died): ECS reports its task stopped. */
  exit(taskArn: string): void {
    const task = this.tasks.get(taskArn);
    if (task) Object.assign(task, { lastStatus: "STOPPED", desiredStatus: "STOPPED" });
  }
}
