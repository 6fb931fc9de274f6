/** Recorded provider responses (test/fixtures/wire/) as raw replies for the local LLM server. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { RawResponse } from "../../src/providers/local-server/types";

const FIXTURES = join(__dirname, "../fixtures/wire");

/** The fixture file `name` (e.g. `anthropic-stream-text.sse`), to be sent byte for byte. */
export function wireFixture(name: string, status = 200): RawResponse {
  return { status, body: readFileSync(join(FIXTURES, name), "utf8") };
}
