/** Why a call or listing of a runner environment never reached a runner (no I/O: workflows use it too). */
export type UnclaimedWhy = "timeout" | "missing" | "unlaunchable";

/** The error a call or listing that never reached a runner gets, as the run reads it. */
export function unclaimedText(
  environment: string,
  why: UnclaimedWhy,
  waitMs: number,
  what: "call" | "listing",
  /** An earlier attempt was taken by a runner that stopped answering: the call may have run, in part. */
  takenBefore = false,
): string {
  const consequence = what === "call" ? "it did not run" : "nothing was listed";
  if (takenBefore && what === "call")
    return `No runner of environment \`${environment}\` took this call again within ${Math.round(waitMs / 1000)} s after the runner that took it stopped answering; it may have run, in part.`;
  if (why === "missing") return `Environment \`${environment}\` does not exist (any more); ${consequence}.`;
  if (why === "unlaunchable")
    return `Environment \`${environment}\` is launched, but this deployment's workers launch no runners (KEEL_LAUNCHER); ${consequence}.`;
  return what === "call"
    ? `No runner of environment \`${environment}\` took this call within ${Math.round(waitMs / 1000)} s; it did not run.`
    : `no runner of environment \`${environment}\` took the listing within ${Math.round(waitMs / 1000)} s`;
}
