/**
 * A session's stored entries through the API (`GET /v1/sessions/{id}/entries`), page after page:
 * what every command that reads a whole session uses.
 */
import type { ApiClient } from "../api-client/client";

/** Entries per request (the API's largest page). */
const ENTRIES_PAGE_LIMIT = 1_000;

/** One page of stored entries after `after` (a sequence number; undefined: from the start). */
export function entriesPage(
  client: ApiClient,
  sessionId: string,
  after: number | undefined,
  limit = ENTRIES_PAGE_LIMIT,
) {
  return client.json(
    client.api.v1.sessions[":sessionId"].entries.$get({
      param: { sessionId },
      query: { limit: String(limit), ...(after !== undefined ? { after: String(after) } : {}) },
    }),
  );
}

/** Every stored entry of the session in sequence order, one request per page. */
export async function* storedEntries(
  client: ApiClient,
  sessionId: string,
): AsyncGenerator<{ seq: number; entry: Record<string, unknown> }> {
  for (let after: number | undefined; ; ) {
    const page = await entriesPage(client, sessionId, after);
    for (const stored of page.entries) {
      after = stored.seq;
      yield stored as { seq: number; entry: Record<string, unknown> };
    }
    if (page.nextAfter === undefined || page.entries.length === 0) return;
  }
}
