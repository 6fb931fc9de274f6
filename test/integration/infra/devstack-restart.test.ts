/**
 * The local servers restart as they were (what the chaos suite's outages rely on): SeaweedFS on
 * its data folder and ports keeps its objects, the Temporal dev server on its database and port
 * keeps its workflows, and a SIGKILLed service is gone at once.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { Client, Connection } from "@temporalio/client";
import { startS3DevServer } from "../../../src/cli/devstack/s3-server";
import { startTemporalDevServer } from "../../../src/cli/devstack/temporal-server";
import { createS3Client } from "../../../src/store/s3-config";
import { testTmpDir } from "../../support/integration-env";

// Two extra servers start and restart here: generous on a small shared machine.
jest.setTimeout(180_000);

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(testTmpDir(), "restart-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test("SeaweedFS stopped and started on its data folder and ports still holds what was written", async () => {
  const first = await startS3DevServer({ dataDir: dir, bucket: "restart" });
  const client = createS3Client(first.settings);
  try {
    await client.send(new PutObjectCommand({ Bucket: "restart", Key: "kept", Body: "before the outage" }));
    await first.process.kill();
    expect(first.process.isAlive()).toBe(false);
    await expect(client.send(new GetObjectCommand({ Bucket: "restart", Key: "kept" }))).rejects.toThrow();

    const second = await startS3DevServer({ dataDir: dir, bucket: "restart", ports: first.ports });
    try {
      expect(second.settings.endpoint).toBe(first.settings.endpoint);
      const stored = await client.send(new GetObjectCommand({ Bucket: "restart", Key: "kept" }));
      expect(await stored.Body?.transformToString()).toBe("before the outage");
    } finally {
      await second.process.stop();
    }
  } finally {
    client.destroy();
  }
});

test("the Temporal dev server restarted on its database and port still has its running workflow", async () => {
  const first = await startTemporalDevServer({ dataDir: dir, persist: true });
  const workflowId = "restart-proof";
  try {
    const connection = await Connection.connect({ address: first.address });
    // No worker: the workflow stays running, which is what must survive the restart.
    await new Client({ connection }).workflow.start("neverRuns", { workflowId, taskQueue: "nobody" });
    await connection.close();
  } finally {
    await first.process.stop();
  }
  const second = await startTemporalDevServer({
    dataDir: dir,
    persist: true,
    port: first.ports.grpc,
  });
  try {
    expect(second.address).toBe(first.address);
    const connection = await Connection.connect({ address: second.address });
    const description = await new Client({ connection }).workflow.getHandle(workflowId).describe();
    await connection.close();
    expect(description.status.name).toBe("RUNNING");
  } finally {
    await second.process.stop();
  }
});
