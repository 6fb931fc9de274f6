/**
 * A `fetch` whose connections obey the egress policy (egress-policy.ts): every connection,
 * redirects included, resolves its host through `guardedLookup`, and an IP literal is checked
 * before connecting. The SDK clients of the model providers take it as their `fetch`.
 */

import { isIP } from "node:net";
import { Agent, buildConnector, fetch as undiciFetch } from "undici";
import { checkAddresses, guardedLookup, type HostAllowance, normalizeHost } from "./egress-policy";

/** The dispatcher: undici's own connector, with the guarded lookup and the IP-literal check in front. */
function guardedAgent(allowed: HostAllowance): Agent {
  const connect = buildConnector({ lookup: guardedLookup(allowed) });
  return new Agent({
    connect: (options, callback) => {
      const host = normalizeHost(options.hostname);
      if (isIP(host)) {
        try {
          checkAddresses(host, [host], allowed);
        } catch (refusal) {
          callback(refusal as Error, null);
          return;
        }
      }
      return connect(options, callback);
    },
  });
}

/**
 * `fetch` over `guardedAgent(allowed)`. Typed as the global `fetch` the SDKs expect: undici's
 * fetch is the implementation behind Node's global one and takes and returns the same objects,
 * but declares its own copies of the Request and Response types.
 */
export function guardedFetch(allowed: HostAllowance): typeof fetch {
  const dispatcher = guardedAgent(allowed);
  const guarded = (input: Parameters<typeof undiciFetch>[0], init?: Parameters<typeof undiciFetch>[1]) =>
    undiciFetch(input, { ...init, dispatcher });
  return guarded as unknown as typeof fetch;
}
