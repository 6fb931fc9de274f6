/** The session viewer's links: to the Temporal UI, and from a run back to the viewer page. */

/**
 * The Temporal UI's list of a session's runs (every run of its workflow id, continue-as-new
 * included). Entries do not record which run wrote them, so this is as close as a link from one
 * call can get; the call's activity is labelled there with its summary (`bash: …`, `llm … turn N`).
 */
export function temporalRunsUrl(uiBaseUrl: string, namespace: string, workflowId: string): string {
  const query = encodeURIComponent(`WorkflowId="${workflowId}"`);
  return `${uiBaseUrl.replace(/\/+$/, "")}/namespaces/${encodeURIComponent(namespace)}/workflows?query=${query}`;
}

/** Path of the viewer page of a session (`GET /view/sessions/{id}`). */
export function viewerPagePath(sessionId: string): string {
  return `/view/sessions/${encodeURIComponent(sessionId)}`;
}

/**
 * The Markdown a run carries as its static details (the Temporal UI's "User Metadata"): a link
 * to the session's viewer page at the API's public address.
 */
export function viewerLinkMarkdown(apiPublicUrl: string, sessionId: string): string {
  return `[Transcript of session ${sessionId}](${apiPublicUrl.replace(/\/+$/, "")}${viewerPagePath(sessionId)})`;
}
