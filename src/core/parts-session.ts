/**
 * Import and export of whole session files of parts messages (`parts-messages.ts`; tunacode's
 * session JSON):
 * `{version, session_id, project_id, created_at, last_modified, working_directory,
 *   current_model, total_tokens, session_total_usage, thoughts, messages}`.
 *
 * Import turns the messages into a linear session tree (one message entry each, system prompts
 * stripped) and keeps every other key in a `custom` entry (`keel.wire-session`) so export can
 * give them back. Export writes the messages on the path to the leaf.
 */
import type { RandomSource } from "./ids";
import { makeUniqueEntryId } from "./ids";
import { convertToLlm } from "./messages";
import { canonicalToParts, type PartsMessage, partsToCanonical } from "./parts-messages";
import {
  createCustomEntry,
  createMessageEntry,
  createModelChangeEntry,
  createSessionHeader,
} from "./session-entries";
import { indexSession, isoToEpochMs, pathToRoot } from "./session-tree";
import type { SessionEntry, SessionFile } from "./session-types";

/** Custom type of the entry holding an imported file's metadata; stored in sessions, so its value stays. */
const PARTS_SESSION_CUSTOM_TYPE = "keel.wire-session";

/** The session file keys other than `messages`, kept as they were. */
interface PartsSessionMetadata {
  version?: unknown;
  session_id?: unknown;
  project_id?: unknown;
  created_at?: unknown;
  last_modified?: unknown;
  working_directory?: unknown;
  current_model?: unknown;
  total_tokens?: unknown;
  session_total_usage?: unknown;
  thoughts?: unknown;
  /** Text of system-prompt parts stripped on import (never part of history). */
  stripped_system_prompts?: string[];
}

export interface PartsSession extends Omit<PartsSessionMetadata, "stripped_system_prompts"> {
  messages: PartsMessage[];
}

export interface PartsSessionImport {
  session: SessionFile;
  /** What could not be read (the rest was imported). */
  problems: string[];
}

const METADATA_KEYS = [
  "version",
  "session_id",
  "project_id",
  "created_at",
  "last_modified",
  "working_directory",
  "current_model",
  "total_tokens",
  "session_total_usage",
  "thoughts",
] as const;

/**
 * Import a tunacode session JSON file into a pi session tree. `random` assigns entry ids; `fallbackTime` (ISO)
 * stands in for a missing `created_at`. Never throws; unreadable messages become `problems`.
 */
export function importPartsSession(
  data: unknown,
  random: RandomSource,
  fallbackTime: string,
): PartsSessionImport {
  const record =
    typeof data === "object" && data !== null && !Array.isArray(data)
      ? (data as Record<string, unknown>)
      : {};
  const problems: string[] = record === data ? [] : ["session file is not a JSON object"];
  const createdAt =
    typeof record.created_at === "string" && !Number.isNaN(Date.parse(record.created_at))
      ? record.created_at
      : fallbackTime;
  const [provider, modelId] = splitModel(record.current_model);
  const converted = partsToCanonical(Array.isArray(record.messages) ? record.messages : [], {
    fallbackTimestamp: isoToEpochMs(createdAt),
    fallbackProvider: provider,
    fallbackModel: modelId,
  });
  problems.push(...converted.problems);
  if (!Array.isArray(record.messages)) problems.push("session file has no messages list");

  const taken = new Set<string>();
  const entries: SessionEntry[] = [];
  const place = (timestamp: string) => {
    const id = makeUniqueEntryId(random, taken);
    taken.add(id);
    return { id, parentId: entries[entries.length - 1]?.id ?? null, timestamp };
  };
  const metadata: PartsSessionMetadata = {};
  for (const key of METADATA_KEYS) if (key in record) metadata[key] = record[key];
  if (converted.systemPrompts.length > 0) metadata.stripped_system_prompts = converted.systemPrompts;
  entries.push(createCustomEntry(place(createdAt), PARTS_SESSION_CUSTOM_TYPE, metadata));
  if (provider && modelId) entries.push(createModelChangeEntry(place(createdAt), provider, modelId));
  for (const message of converted.messages) {
    entries.push(createMessageEntry(place(new Date(message.timestamp).toISOString()), message));
  }
  const sessionId =
    typeof record.session_id === "string" && record.session_id ? record.session_id : entries[0]!.id;
  const cwd = typeof record.working_directory === "string" ? record.working_directory : "";
  return { session: { header: createSessionHeader(sessionId, createdAt, cwd), entries }, problems };
}

/**
 * Export the path to `leafId` (default: the last entry) as tunacode session JSON. Metadata comes from
 * the import entry when there is one; `messages` are the path's messages converted for the LLM
 * (compactions are not applied: the export carries the full path).
 */
export function exportPartsSession(session: SessionFile, leafId?: string): PartsSession {
  const index = indexSession(session.entries);
  const leaf = leafId ?? index.leafId;
  const path = leaf ? pathToRoot(index.byId, leaf) : [];
  const imported = path.find((e) => e.type === "custom" && e.customType === PARTS_SESSION_CUSTOM_TYPE);
  const metadata = (imported?.type === "custom" ? imported.data : undefined) as
    | PartsSessionMetadata
    | undefined;
  const { stripped_system_prompts: _stripped, ...kept } = metadata ?? {};
  const agentMessages = path.flatMap((e) => (e.type === "message" ? [e.message] : []));
  return {
    ...kept,
    session_id: kept.session_id ?? session.header.id,
    working_directory: kept.working_directory ?? session.header.cwd ?? "",
    messages: canonicalToParts(convertToLlm(agentMessages)),
  };
}

/** "provider:model" (pydantic-ai's form) split in two; a bare model name has no provider. */
function splitModel(value: unknown): [string | undefined, string | undefined] {
  if (typeof value !== "string" || value === "") return [undefined, undefined];
  const colon = value.indexOf(":");
  return colon > 0 ? [value.slice(0, colon), value.slice(colon + 1)] : [undefined, value];
}
