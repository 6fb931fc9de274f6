/** The pi session format version Keel writes (a plain constant: safe for the workflow bundle). */
export const CURRENT_SESSION_VERSION = 3;
