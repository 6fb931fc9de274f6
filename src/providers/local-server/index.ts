export { FAULT_HEADER } from "./faults";
export {
  DEFAULT_SCENARIO,
  quickstartScenario,
  SCENARIO_HEADER,
  SCENARIO_HINT,
} from "./scenarios";
export { LocalLlmServer, type LocalLlmServerOptions, startLocalLlmServer } from "./server";
export type * from "./types";
