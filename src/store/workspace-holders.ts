/**
 * Which disk holds a session's workspace copy: an epoch in S3 (`workspace/holder.json`), replaced
 * by a new random one each time a disk takes the workspace, and the epoch each disk last took,
 * beside its copy. A copy is current only while the two agree. A disk whose epoch is another
 * held the workspace before another disk changed it: its copy is stale and must not be worked on,
 * however recent its files look (docs/store.md, "Holder epochs"). Random, not counted: a session
 * deleted and made again under the same id starts no count that an old copy's epoch could match.
 */
import { randomUUID } from "node:crypto";
import { GetObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { z } from "zod";
import { ConditionalObjects } from "./conditional-objects";
import type { S3Settings } from "./s3-config";
import { isNotFound } from "./s3-requests";
import { type SessionRef, workspaceHolderKey } from "./session-keys";

const HolderRecordSchema = z.object({ epoch: z.string().min(1), takenAt: z.string() });

/** The stored holder epoch and the version it was read at (for a conditional replace). */
export interface StoredHolder {
  /** Undefined when the object is there but unreadable: the next take replaces it. */
  epoch: string | undefined;
  etag: string;
}

export class WorkspaceHolders {
  private readonly conditional: ConditionalObjects;

  constructor(
    private readonly client: S3Client,
    private readonly settings: Pick<S3Settings, "bucket" | "prefix">,
  ) {
    this.conditional = new ConditionalObjects(client, settings.bucket);
  }

  /** The session's holder epoch; undefined when no disk has taken its workspace yet. */
  async read(ref: SessionRef): Promise<StoredHolder | undefined> {
    try {
      const response = await this.client.send(
        new GetObjectCommand({
          Bucket: this.settings.bucket,
          Key: workspaceHolderKey(this.settings.prefix, ref),
        }),
      );
      if (!response.ETag) throw new Error("the workspace holder record was read without an ETag");
      const parsed = HolderRecordSchema.safeParse(safeJson(await response.Body?.transformToString("utf8")));
      return { epoch: parsed.success ? parsed.data.epoch : undefined, etag: response.ETag };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /**
   * Takes the workspace for the caller's disk: stores a new epoch, only if the stored record is
   * still `seen` (the version read; undefined: none). Returns the new epoch, or undefined when
   * another disk took it in between (read again).
   */
  async take(ref: SessionRef, seen: StoredHolder | undefined): Promise<string | undefined> {
    const epoch = randomUUID();
    const key = workspaceHolderKey(this.settings.prefix, ref);
    const body = JSON.stringify({ epoch, takenAt: new Date().toISOString() });
    const taken = seen
      ? await this.conditional.replaceIfMatch(key, body, "application/json", seen.etag)
      : await this.conditional.createIfAbsent(key, body, "application/json");
    return taken ? epoch : undefined;
  }
}

function safeJson(text: string | undefined): unknown {
  try {
    return JSON.parse(text ?? "");
  } catch {
    return undefined;
  }
}
