export { FAULT_HEADER } from "./faults";
export { DEFAULT_SCENARIO, demoScenario, SCENARIO_HEADER } from "./scenarios";
export { LocalLlmServer, type LocalLlmServerOptions, startLocalLlmServer } from "./server";
export type * from "./types";
