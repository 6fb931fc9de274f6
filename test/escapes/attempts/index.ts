/**
 * Every attempt, class by class (runner tokens first, while the victim's folder is as it was; the
 * cross-tenant routes that may create a session of the victim's id come last in API).
 */
import type { Attempt } from "../attempt";
import { adminAttempts } from "./admin";
import { apiAttempts } from "./api";
import { archiveAttempts } from "./archive";
import { quotaAttempts } from "./quota";
import { raceAttempts } from "./races";
import { runnerAttempts } from "./runners";
import { sandboxAttempts } from "./sandbox";
import { secretAttempts } from "./secrets";
import { spillAttempts } from "./spill";

export const ALL_ATTEMPTS: readonly Attempt[] = [
  ...runnerAttempts,
  ...apiAttempts,
  ...adminAttempts,
  ...sandboxAttempts,
  ...secretAttempts,
  ...quotaAttempts,
  ...raceAttempts,
  ...spillAttempts,
  ...archiveAttempts,
];
