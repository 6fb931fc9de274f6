/**
 * The workflow bundle of the test run: proof workflows for the infrastructure tests.
 * Product workflows join this file as they are written (re-exported from src/workflows).
 */
import { condition, defineSignal, proxyActivities, setHandler, sleep } from "@temporalio/workflow";

const { echo } = proxyActivities<{ echo(text: string): Promise<string> }>({
  startToCloseTimeout: "10 seconds",
});

export const nameSignal = defineSignal<[string]>("name");

/** Waits for a name by signal, has an activity greet it, returns the greeting. */
export async function greetBySignal(): Promise<string> {
  let name: string | undefined;
  setHandler(nameSignal, (value) => {
    name = value;
  });
  await condition(() => name !== undefined);
  return echo(`hello ${name}`);
}

/** Sleeps a whole day: finishes at once on a time-skipping server. */
export async function sleepOneDay(): Promise<number> {
  const start = Date.now();
  await sleep("1 day");
  return Date.now() - start;
}

export * from "../../src/workflows/index";
