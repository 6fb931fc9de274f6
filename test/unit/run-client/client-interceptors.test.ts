/** Keel's client connections retry every Temporal request but an activity task long poll. */
import { clientInterceptors } from "../../../src/run-client/client-interceptors";

type Interceptor = ReturnType<typeof clientInterceptors>[number];
type Options = Parameters<Interceptor>[0];
type NextCall = Parameters<Interceptor>[1];

const SERVICE = "/temporal.api.workflowservice.v1.WorkflowService";

function intercepted(method: string): { passedThrough: boolean } {
  const [interceptor] = clientInterceptors();
  if (!interceptor) throw new Error("no interceptor");
  const next = { next: "call" };
  const call = interceptor(
    { method_definition: { path: `${SERVICE}/${method}` } } as unknown as Options,
    (() => next) as unknown as NextCall,
  );
  return { passedThrough: (call as unknown) === next };
}

test("an activity task long poll goes out as it is: no retry to fire after its connection closed", () => {
  expect(intercepted("PollActivityTaskQueue").passedThrough).toBe(true);
});

test("every other request goes through the SDK's retries", () => {
  for (const method of ["RespondActivityTaskCompleted", "StartWorkflowExecution", "DescribeTaskQueue"])
    expect(intercepted(method).passedThrough).toBe(false);
});
