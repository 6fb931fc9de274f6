/** Moving sessions in and out: export (pi JSONL or a session archive with the workspace) and import. */
import { Readable } from "node:stream";
import { createRoute, z } from "@hono/zod-openapi";
import type { HonoRequest } from "hono";
import { importPartsSession } from "../../core/parts-session";
import { parseSession } from "../../core/session-codec";
import type { SessionEntry, SessionHeader } from "../../core/session-types";
import { ProblemError } from "../problems";
import type { RouteContext } from "../route-context";
import { createRouter } from "../router";
import {
  CreatedSessionSchema,
  ExportQuerySchema,
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
import { createSessionFrom, secureRandom } from "./new-session";
import { pageHeaders, viewerExport } from "./viewer";

/** Skipped lines reported back by an import, at most. */
const MAX_IMPORT_WARNINGS = 50;
const JSONL_CONTENT_TYPE = "application/x-ndjson";
const GZIP_CONTENT_TYPE = "application/gzip";
/** Media types of a session archive (`keel export --with-workspace`). */
const ARCHIVE_MEDIA_TYPES = new Set([GZIP_CONTENT_TYPE, "application/x-gzip", "application/x-tar+gzip"]);

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
        "text/html": { schema: z.string() },
      },
    },
    ...problemResponses(),
  },
});

/** An `application/json` import of the parts session format (`core/parts-session.ts`): an object with a `messages` list. */
const PARTS_SESSION_JSON_SCHEMA = {
  type: "object" as const,
  title: "Wire session JSON (kind/parts messages)",
  required: ["messages"],
  properties: {
    // Any JSON value, kept with the session's metadata (core/parts-session.ts: `session_id?: unknown`).
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
        "application/json": { schema: { anyOf: [PARTS_SESSION_JSON_SCHEMA, PI_HEADER_JSON_SCHEMA] } },
      },
    },
  },
  responses: {
    201: { description: "Imported", content: { "application/json": { schema: CreatedSessionSchema } } },
    ...problemResponses(413, 415, 422),
  },
  parameters: [idempotencyHeaderParam],
});

type ParsedImport = { header: SessionHeader | null; entries: SessionEntry[]; warnings: string[] };

const JSONL_MEDIA_TYPES = new Set([JSONL_CONTENT_TYPE, "application/jsonl", "text/plain", ""]);

/** Reads an import body: a parts session JSON, or a pi JSONL file (also when sent as JSON). */
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
      const { session, problems } = importPartsSession(value, secureRandom, nowIso);
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
  return createRouter()
    .openapi(exportSession, async (c) => {
      const { sessionId } = c.req.valid("param");
      const ref = refOf(c, sessionId);
      if (c.req.valid("query").format === "html") {
        // The viewer as one offline file (it checks the session exists itself).
        const page = await viewerExport(deps, ref);
        const headers = {
          ...pageHeaders(page),
          "content-disposition": `attachment; filename="${sessionId}.html"`,
        };
        return c.body(page.html, 200, headers) as never;
      }
      await requireSession(deps, ref);
      if (c.req.valid("query").workspace === "true") {
        const { archive, snapshotEntryId, environment } = await exportSessionArchive(
          deps.store,
          deps.snapshots,
          ref,
          deps.environments?.store,
        );
        // Sent as it is packed; a client that goes away destroys the stream (and its folder).
        return c.body(Readable.toWeb(archive) as ReadableStream<Uint8Array>, 200, {
          "content-type": GZIP_CONTENT_TYPE,
          "content-disposition": `attachment; filename="${sessionId}.tar.gz"`,
          // Which entry's snapshot the files are (absent: no snapshot applies, the folder is empty).
          ...(snapshotEntryId ? { "x-keel-workspace-entry": snapshotEntryId } : {}),
          // The runner environment whose stored workspace the files are, when they are one's.
          ...(environment ? { "x-keel-workspace-environment": environment } : {}),
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
        const created = await createSessionFrom(deps, tenantId, parsed);
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
    });
}
