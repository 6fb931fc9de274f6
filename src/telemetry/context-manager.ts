/**
 * An OpenTelemetry context manager over Node's AsyncLocalStorage, so the active span follows
 * `await`s (the API's global default keeps no context at all). The same contract as
 * `@opentelemetry/context-async-hooks`' AsyncLocalStorageContextManager, in the few lines Keel uses.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { type Context, type ContextManager, ROOT_CONTEXT } from "@opentelemetry/api";

export class AsyncLocalContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();

  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    context: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.storage.run(context, () => fn.apply(thisArg, args));
  }

  /** Functions are bound; other targets (emitters) are returned as they are. */
  bind<T>(context: Context, target: T): T {
    if (typeof target !== "function") return target;
    const storage = this.storage;
    const fn = target as unknown as (...args: unknown[]) => unknown;
    return function (this: unknown, ...args: unknown[]) {
      return storage.run(context, () => fn.apply(this, args));
    } as unknown as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.storage.disable();
    return this;
  }
}
