/**
 * The bare workflow's activities doing the I/O a durable agent turn cannot do without, and
 * nothing else: the "llm" activity calls the local LLM server through the OpenAI SDK (streaming)
 * and stores the answer as one S3 object; the "tool" activity lists a folder and stores the
 * listing the same way. Each object is a conditional create (`If-None-Match: *`), as a session
 * entry is. What a Keel turn costs over this is Keel's own work: its session format and entry
 * cache, the workspace and its lock, live events, its workflow code.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { Context } from "@temporalio/activity";
import OpenAI from "openai";
import type { LocalLlmServer } from "../../src/providers/local-server";
import { createS3Client, type S3Settings } from "../../src/store/s3-config";
import { bareActivities } from "./bare-activities";
import type { BareActivities } from "./bare-workflow";

const SCENARIO = "bare-io";

/** Where the activities do their I/O. */
export interface BareIo {
  s3: S3Settings;
  /** The local LLM server's OpenAI base URL (`…/v1`). */
  openaiBaseURL: string;
  /** The folder the "tool" activity lists (created with one file). */
  folder: string;
}

/** Teaches the local LLM server the scenario the "llm" activity plays (a short text answer). */
export function registerBareIoScenario(llm: LocalLlmServer): void {
  llm.addScenario(SCENARIO, { turns: [], after: { text: "listed" } });
}

export function bareIoActivities({ s3: settings, openaiBaseURL, folder }: BareIo): BareActivities {
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, "README.md"), "bench\n");
  const s3 = createS3Client(settings);
  const openai = new OpenAI({ apiKey: "local-key", baseURL: openaiBaseURL, maxRetries: 0 });
  /** One object per activity and turn, under a key no other run shares. */
  const store = async (kind: string, turn: number, body: unknown) => {
    const { workflowExecution, activityId } = Context.current().info;
    await s3.send(
      new PutObjectCommand({
        Bucket: settings.bucket,
        Key: `${settings.prefix}bare-io/${workflowExecution?.workflowId ?? activityId}/${kind}-${turn}.json`,
        Body: JSON.stringify(body),
        ContentType: "application/json",
        IfNoneMatch: "*",
      }),
    );
  };
  return {
    // A run's start costs no I/O here: only the turns are compared.
    ...bareActivities(0),
    async bareLlm(turn) {
      const stream = await openai.chat.completions.create({
        model: "local-chat",
        stream: true,
        messages: [{ role: "user", content: `[scenario:${SCENARIO}] list the workspace (turn ${turn})` }],
      });
      let text = "";
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
      await store("llm", turn, { role: "assistant", content: [{ type: "text", text }] });
      return turn;
    },
    async bareTool(turn) {
      const names = (await readdir(folder, { withFileTypes: true })).map((entry) => entry.name);
      await store("tool", turn, { role: "toolResult", content: [{ type: "text", text: names.join("\n") }] });
      return turn;
    },
  };
}
