/** Session data routes: entries (paged), export, import, fork, labels; branch and compact. */
import { randomBytes, randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import { createRoute, z } from "@hono/zod-openapi";
import type { HonoRequest } from "hono";
import { makeUniqueEntryId } from "../../core/ids";
import { parseSession } from "../../core/session-codec";
import { createSessionHeader } from "../../core/session-entries";
import { closeForkedPath } from "../../core/session-repair";
import { indexSession, pathToRoot } from "../../core/session-tree";
import type { SessionEntry, SessionHeader } from "../../core/session-types";
import { importWireSession } from "../../core/wire-session";
import { DEFAULT_RUN_SETTINGS, type SessionRef } from "../../workflows/types";
import type { RouteContext } from "../app";
import { ProblemError } from "../problems";
import { createRouter } from "../router";
import { type RunClient, SessionBusyError } from "../run-client";
import {
  BranchBodySchema,
  BranchResultSchema,
  CompactBodySchema,
  CompactResultSchema,
  CreatedSessionSchema,
  DEFAULT_PAGE_LIMIT,
  EntriesPageSchema,
  EntriesQuerySchema,
  ExportQuerySchema,
  ForkBodySchema,
  LabelBodySchema,
  LabelResultSchema,
  PI_HEADER_JSON_SCHEMA,
  SessionParamsSchema,
} from "../schemas";
import {
  exportSessionArchive,
  type ImportedArchive,
  importWorkspace,
  withImportedArchive,
} from "../session-archive";
import { idempotencyHeaderParam, problemResponses, refOf, requireSession } from "./common";

/** Skipped lines reported back by an import, at most. */
export const MAX_IMPORT_WARNINGS = 50;
const JSONL_CONTENT_TYPE = "application/x-ndjson";
const GZIP_CONTENT_TYPE = "application/gzip";
/** Media types of a session archive (`keel export --with-workspace`). */
const ARCHIVE_MEDIA_TYPES = new Set([GZIP_CONTENT_TYPE, "application/x-gzip", "application/x-tar+gzip"]);

const getEntries = createRoute({
  method: "get",
  path: "/v1/sessions/{sessionId}/entries",
  summary: "Stored entries in sequence order, paged (only the contiguous prefix while a run writes)",
  request: { params: SessionParamsSchema, query: EntriesQuerySchema },
  responses: {
    200: { description: "A page of entries", content: { "application/json": { schema: EntriesPageSchema } } },
    ...problemResponses(),
  },
});

const exportSession = createRoute({
  method: "get",
  path: "/v1/sessions/{sessionId}/export",
  summary:
    "The whole session as one pi session file (JSONL, version 3); with `workspace=true` a .tar.gz of that file and the workspace at the leaf",
  request: { params: SessionParamsSchema, query: ExportQuerySchema },
  responses: {
    200: {
      description: "pi JSONL, or the session archive (session.jsonl + workspace/)",
      content: {
        [JSONL_CONTENT_TYPE]: { schema: z.string() },
        [GZIP_CONTENT_TYPE]: { schema: z.string().openapi({ format: "binary" }) },
      },
    },
    ...problemResponses(),
  },
});

/** An `application/json` import of the wire format: an object with a `messages` list. */
const WIRE_SESSION_JSON_SCHEMA = {
  type: "object" as const,
  title: "Wire session JSON (kind/parts messages)",
  required: ["messages"],
  properties: {
    // Any JSON value, kept with the session's metadata (core/wire-session.ts: `session_id?: unknown`).
    session_id: { description: "Kept as given with the session's metadata (any JSON value)" },
    messages: {
      type: "array" as const,
      items: {},
      description: "Wire messages; unreadable ones are skipped and reported in warnings",
    },
  },
};

const importSession = createRoute({
  method: "post",
  path: "/v1/sessions/import",
  summary:
    "Import a pi session file (JSONL, versions 1-3), a session JSON of the wire format (kind/parts) or a session archive (.tar.gz with its workspace); returns the new session's id",
  request: {
    body: {
      required: true,
      content: {
        [JSONL_CONTENT_TYPE]: { schema: { type: "string" } },
        // A session archive: its workspace becomes the workspace of the imported session's leaf.
        [GZIP_CONTENT_TYPE]: { schema: { type: "string", format: "binary" } },
        // What `parseImport` reads; documentation only (the handler reads the raw text).
        "application/json": { schema: { anyOf: [WIRE_SESSION_JSON_SCHEMA, PI_HEADER_JSON_SCHEMA] } },
      },
    },
  },
  responses: {
    201: { description: "Imported", content: { "application/json": { schema: CreatedSessionSchema } } },
    ...problemResponses(413, 415, 422),
  },
  parameters: [idempotencyHeaderParam],
});

const forkSession = createRoute({
  method: "post",
  path: "/v1/sessions/{sessionId}/fork",
  summary: "A new session holding the path from the root to `entryId`",
  request: {
    params: SessionParamsSchema,
    body: { required: true, content: { "application/json": { schema: ForkBodySchema } } },
  },
  responses: {
    201: { description: "Forked", content: { "application/json": { schema: CreatedSessionSchema } } },
    ...problemResponses(413, 415, 422),
  },
  parameters: [idempotencyHeaderParam],
});

const branchSession = createRoute({
  method: "post",
  path: "/v1/sessions/{sessionId}/branch",
  summary: "Move the session's leaf to `entryId`, optionally summarizing the abandoned branch",
  request: {
    params: SessionParamsSchema,
    body: { required: true, content: { "application/json": { schema: BranchBodySchema } } },
  },
  responses: {
    200: { description: "The leaf moved", content: { "application/json": { schema: BranchResultSchema } } },
    ...problemResponses(409, 413, 415, 422),
  },
  parameters: [idempotencyHeaderParam],
});

const labelEntry = createRoute({
  method: "post",
  path: "/v1/sessions/{sessionId}/labels",
  summary: "Set the label of an entry (omit `label` to clear it): a label entry appended to an idle session",
  request: {
    params: SessionParamsSchema,
    body: { required: true, content: { "application/json": { schema: LabelBodySchema } } },
  },
  responses: {
    201: { description: "Labelled", content: { "application/json": { schema: LabelResultSchema } } },
    ...problemResponses(409, 413, 415, 422),
  },
  parameters: [idempotencyHeaderParam],
});

const compactSession = createRoute({
  method: "post",
  path: "/v1/sessions/{sessionId}/compact",
  summary: "Compact the session's context now",
  request: {
    params: SessionParamsSchema,
    body: { required: false, content: { "application/json": { schema: CompactBodySchema } } },
  },
  responses: {
    200: {
      description: "Compacted, or why not",
      content: { "application/json": { schema: CompactResultSchema } },
    },
    ...problemResponses(409, 413, 415, 422),
  },
  parameters: [idempotencyHeaderParam],
});

/** A uniform random number in [0, 1) from the system CSPRNG (entry ids of imports). */
function secureRandom(): number {
  return randomBytes(6).readUIntBE(0, 6) / 2 ** 48;
}

type ParsedImport = { header: SessionHeader | null; entries: SessionEntry[]; warnings: string[] };

const JSONL_MEDIA_TYPES = new Set([JSONL_CONTENT_TYPE, "application/jsonl", "text/plain", ""]);

/** Reads an import body: wire session JSON, or a pi JSONL file (also when sent as JSON). */
const mediaTypeOf = (contentTypeHeader: string): string =>
  contentTypeHeader.split(";", 1)[0]?.trim().toLowerCase() ?? "";

function parseImport(text: string, contentTypeHeader: string, nowIso: string): ParsedImport {
  const mediaType = mediaTypeOf(contentTypeHeader);
  if (mediaType !== "application/json" && !JSONL_MEDIA_TYPES.has(mediaType)) {
    throw new ProblemError(
      "unsupported-media-type",
      "Send application/x-ndjson (pi JSONL), application/json or application/gzip (a session archive).",
    );
  }
  if (mediaType === "application/json") {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new ProblemError(
        "malformed-body",
        "The body is not JSON; send pi JSONL as application/x-ndjson.",
      );
    }
    const record = typeof value === "object" && value !== null ? (value as Record<string, unknown>) : {};
    if (Array.isArray(record.messages)) {
      const { session, problems } = importWireSession(value, secureRandom, nowIso);
      return { header: session.header, entries: session.entries, warnings: problems };
    }
    if (record.type !== "session") {
      throw new ProblemError(
        "invalid-session-file",
        "A session JSON must be an object with a `messages` list (or a pi session header).",
      );
    }
  }
  const parsed = parseSession(text);
  if (parsed.header === null && parsed.entries.length === 0) {
    throw new ProblemError("invalid-session-file", "No session header and no readable entry.", {
      errors: parsed.errors.slice(0, MAX_IMPORT_WARNINGS),
    });
  }
  return {
    header: parsed.header,
    entries: parsed.entries,
    warnings: parsed.errors.map((error) => `line ${error.line}: ${error.reason}`),
  };
}

/**
 * A request body as it arrives. A body already read by a middleware (the idempotency record
 * hashes it; Hono keeps it) is handed over from that copy.
 */
async function* requestBody(request: HonoRequest): AsyncGenerator<Uint8Array> {
  const { body, bodyUsed } = request.raw;
  if (body === null) return;
  if (bodyUsed) {
    yield new Uint8Array(await request.arrayBuffer());
    return;
  }
  // Node's web streams are async iterables (the DOM typings do not say so).
  yield* body as unknown as AsyncIterable<Uint8Array>;
}

export function transferRoutes(deps: RouteContext) {
  const createSession = async (
    tenantId: string,
    source: { header: SessionHeader | null; entries: SessionEntry[] },
    parentSession?: string,
  ) => {
    const sessionId = randomUUID();
    const timestamp = new Date(deps.now()).toISOString();
    const header: SessionHeader = source.header
      ? { ...source.header, id: sessionId, ...(parentSession !== undefined ? { parentSession } : {}) }
      : createSessionHeader(sessionId, timestamp, "", parentSession);
    await deps.store.importEntries({ tenantId, sessionId }, header, source.entries);
    return { sessionId, entryCount: source.entries.length, leafId: source.entries.at(-1)?.id ?? null };
  };

  /** The session's entries and the path root → `entryId` (entry-not-found when absent). */
  const pathTo = async (ref: SessionRef, entryId: string) => {
    const { entries } = await deps.store.readEntries(ref, { untilGap: true });
    const path = pathToRoot(indexSession(entries.map((stored) => stored.entry)).byId, entryId);
    if (path.length === 0) throw new ProblemError("entry-not-found", `No entry ${JSON.stringify(entryId)}.`);
    return path;
  };

  /** Runs a maintenance task; a live run on the session makes it a 409. */
  async function exclusive<T>(work: (runs: RunClient) => Promise<T>): Promise<T> {
    try {
      return await work(await deps.runs());
    } catch (error) {
      if (error instanceof SessionBusyError) {
        throw new ProblemError("run-busy", "The session has a live run; try again once it has ended.");
      }
      throw error;
    }
  }

  return (
    createRouter()
      .openapi(getEntries, async (c) => {
        const { sessionId } = c.req.valid("param");
        const { after, limit = DEFAULT_PAGE_LIMIT } = c.req.valid("query");
        const ref = refOf(c, sessionId);
        const { header } = await requireSession(deps, ref);
        const { entries } = header ? await deps.store.readEntries(ref, { untilGap: true }) : { entries: [] };
        const following = after === undefined ? entries : entries.filter((stored) => stored.seq > after);
        const page = following.slice(0, limit);
        const body: z.infer<typeof EntriesPageSchema> = { entries: page };
        if (following.length > page.length) body.nextAfter = page.at(-1)?.seq;
        return c.json(body, 200);
      })
      .openapi(exportSession, async (c) => {
        const { sessionId } = c.req.valid("param");
        const ref = refOf(c, sessionId);
        await requireSession(deps, ref);
        if (c.req.valid("query").workspace === "true") {
          const { archive, snapshotEntryId } = await exportSessionArchive(deps.store, deps.snapshots, ref);
          // Sent as it is packed; a client that goes away destroys the stream (and its folder).
          return c.body(Readable.toWeb(archive) as ReadableStream<Uint8Array>, 200, {
            "content-type": GZIP_CONTENT_TYPE,
            "content-disposition": `attachment; filename="${sessionId}.tar.gz"`,
            // Which entry's snapshot the files are (absent: no snapshot applies, the folder is empty).
            ...(snapshotEntryId ? { "x-keel-workspace-entry": snapshotEntryId } : {}),
          }) as never;
        }
        const jsonl = await deps.store.exportJsonl(ref);
        const response = c.body(jsonl, 200, {
          "content-type": JSONL_CONTENT_TYPE,
          "content-disposition": `attachment; filename="${sessionId}.jsonl"`,
        });
        // The typed handler models JSON responses only; this route's body is JSONL text (so
        // the route is absent from ApiApp's type: the CLI calls it by URL).
        return response as never;
      })
      .openapi(importSession, async (c) => {
        const contentType = c.req.header("content-type") ?? "";
        const nowIso = new Date(deps.now()).toISOString();
        const tenantId = c.get("tenantId");
        /** Imports a parsed session; with an archive, records its workspace at the session's leaf. */
        const importParsed = async (parsed: ParsedImport, archive?: ImportedArchive) => {
          const leaf = parsed.entries.at(-1);
          if (archive?.workspaceDir && !leaf) {
            throw new ProblemError(
              "invalid-session-file",
              "The archive has a workspace but its session has no entry to attach it to.",
            );
          }
          const created = await createSession(tenantId, parsed);
          const workspace =
            archive?.workspaceDir && leaf
              ? await importWorkspace(
                  deps.snapshots,
                  { tenantId, sessionId: created.sessionId },
                  archive.workspaceDir,
                  { id: leaf.id, seq: parsed.entries.length - 1 },
                )
              : undefined;
          const warnings = parsed.warnings.slice(0, MAX_IMPORT_WARNINGS);
          return c.json(
            { ...created, ...(workspace ? { workspace } : {}), ...(warnings.length > 0 ? { warnings } : {}) },
            201,
          );
        };
        if (!ARCHIVE_MEDIA_TYPES.has(mediaTypeOf(contentType))) {
          return importParsed(parseImport(await c.req.text(), contentType, nowIso));
        }
        return withImportedArchive(requestBody(c.req), (archive) =>
          importParsed(parseImport(archive.jsonl, JSONL_CONTENT_TYPE, nowIso), archive),
        );
      })
      .openapi(forkSession, async (c) => {
        const { sessionId } = c.req.valid("param");
        const { entryId } = c.req.valid("json");
        const ref = refOf(c, sessionId);
        const { header } = await requireSession(deps, ref);
        const path = await pathTo(ref, entryId);
        // A fork at an assistant entry with tool calls would leave them unanswered: their results
        // (if any) are not on the path. They get error results saying they were not run here.
        const taken = new Set(path.map((entry) => entry.id));
        const closing = closeForkedPath(path, {
          makeId: () => makeUniqueEntryId(secureRandom, taken),
          now: deps.now(),
        });
        const created = await createSession(
          ref.tenantId,
          { header: header ?? null, entries: [...path, ...closing] },
          sessionId,
        );
        return c.json({ ...created, parentSession: sessionId }, 201);
      })
      .openapi(labelEntry, async (c) => {
        const { sessionId } = c.req.valid("param");
        const { entryId, label } = c.req.valid("json");
        const ref = refOf(c, sessionId);
        await requireSession(deps, ref);
        await pathTo(ref, entryId);
        const result = await exclusive(async (runs) =>
          runs.label(ref, { targetId: entryId, ...(label !== undefined ? { label } : {}) }),
        );
        return c.json(
          {
            sessionId,
            entryId: result.entryId,
            targetId: entryId,
            ...(label !== undefined ? { label } : {}),
          },
          201,
        );
      })
      // Labels, branch and compact run as short workflows under the session's run id: while a run
      // is live they are refused (409), so they never race it.
      .openapi(branchSession, async (c) => {
        const { sessionId } = c.req.valid("param");
        const { entryId, summarize } = c.req.valid("json");
        const ref = refOf(c, sessionId);
        await requireSession(deps, ref);
        await pathTo(ref, entryId);
        const result = await exclusive(async (runs) =>
          runs.branch(ref, { entryId, summarize, model: deps.config.defaultModel }),
        );
        return c.json({ sessionId, leafId: result.leafId, summarized: result.summarized }, 200);
      })
      .openapi(compactSession, async (c) => {
        const { sessionId } = c.req.valid("param");
        const { instructions } = c.req.valid("json");
        const ref = refOf(c, sessionId);
        await requireSession(deps, ref);
        const { reserveTokens, keepRecentTokens } = DEFAULT_RUN_SETTINGS.compaction;
        const result = await exclusive(async (runs) =>
          runs.compact(ref, {
            model: deps.config.defaultModel,
            instructions,
            reserveTokens,
            keepRecentTokens,
          }),
        );
        return c.json({ sessionId, ...result }, 200);
      })
  );
}
