/**
 * The gRPC interceptors of Keel's Temporal client connections: the SDK's retries for every call
 * but an activity task long poll (runner environments' calls: environments/calls.ts). A failed
 * long poll is not worth retrying for its runner, which claims again; and a retry pending when its
 * connection closes (a shutdown, a test's teardown with a runner's poll still open) would throw
 * from the SDK's timer, outside any request, and end the process.
 */
import { defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from "@temporalio/client";

type Interceptor = ReturnType<typeof makeGrpcRetryInterceptor>;

const LONG_POLL = /\/PollActivityTaskQueue$/;

export function clientInterceptors(): Interceptor[] {
  const retrying = makeGrpcRetryInterceptor(defaultGrpcRetryOptions());
  return [
    (options, nextCall) =>
      LONG_POLL.test(options.method_definition.path)
        ? // The next call as it is, as gRPC's own pass-through interceptors return it (its type
          // names grpc-js's class, which this project does not import).
          (nextCall(options) as ReturnType<Interceptor>)
        : retrying(options, nextCall),
  ];
}
