/** The benchmarks' own workflow bundle (bundled apart from Keel's production workflows). */
export { bareTurns } from "./bare-workflow";
export { naiveRun } from "./naive-workflow";
