/**
 * The Temporal task queues of runner environments' calls. The workflow schedules a call there and
 * no worker polls them: the API takes their tasks for the environments' runners
 * (environments/calls.ts), so a call reaches a waiting runner as soon as it is scheduled. A
 * launched environment's calls go to one queue per session: its runner's token serves that
 * session only.
 */
export function runnerTaskQueue(tenantId: string, environment: string, sessionId?: string): string {
  const queue = `keel-runner/${tenantId}/${environment}`;
  return sessionId === undefined ? queue : `${queue}/${sessionId}`;
}
