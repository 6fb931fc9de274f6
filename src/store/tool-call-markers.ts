/**
 * "Started" markers for tool calls that are not safe to re-run. A marker is written (conditional
 * create) before such a tool runs; a later attempt that finds the marker but no stored result
 * knows an earlier attempt may have run it and reports an unknown outcome instead of running it
 * again.
 */
import { GetObjectCommand, PutObjectCommand, type S3Client, S3ServiceException } from "@aws-sdk/client-s3";
import type { S3Settings } from "./s3-config";
import { assertValidRef, type SessionRef } from "./session-keys";

const TOOL_CALL_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

export class ToolCallMarkers {
  constructor(
    private readonly client: S3Client,
    private readonly settings: S3Settings,
  ) {}

  private key(ref: SessionRef, toolCallId: string): string {
    assertValidRef(ref);
    if (!TOOL_CALL_ID.test(toolCallId))
      throw new Error(`invalid tool call id: ${JSON.stringify(toolCallId)}`);
    return `${this.settings.prefix}tenants/${ref.tenantId}/sessions/${ref.sessionId}/markers/${toolCallId}.json`;
  }

  /**
   * Records that an attempt is about to run the call. Returns false when a marker was already
   * there (an earlier attempt started it).
   */
  async markStarted(ref: SessionRef, toolCallId: string, attempt: number): Promise<boolean> {
    try {
      await this.client.send(
        new PutObjectCommand({
          Bucket: this.settings.bucket,
          Key: this.key(ref, toolCallId),
          Body: JSON.stringify({ toolCallId, attempt, startedAt: new Date().toISOString() }),
          ContentType: "application/json",
          IfNoneMatch: "*",
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof S3ServiceException && error.$metadata.httpStatusCode === 412) return false;
      throw error;
    }
  }

  async wasStarted(ref: SessionRef, toolCallId: string): Promise<boolean> {
    try {
      await this.client.send(
        new GetObjectCommand({ Bucket: this.settings.bucket, Key: this.key(ref, toolCallId) }),
      );
      return true;
    } catch (error) {
      if (error instanceof S3ServiceException && error.$metadata.httpStatusCode === 404) return false;
      throw error;
    }
  }
}
