/** The benchmarks' own workflow bundle (bundled apart from Keel's production workflows). */
export { bareTurns, shapedTurns } from "./bare-workflow";
export { naiveRun } from "./naive-workflow";
