/** Names one session of one tenant: what every store call, activity and route is keyed by. */
export interface SessionRef {
  tenantId: string;
  sessionId: string;
}
