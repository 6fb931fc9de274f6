// Preloaded into a worker process by a test (NODE_OPTIONS=--require): names under .keel.test
// resolve to 127.0.0.1, as a DNS record of a test host would, so a process can reach a local
// server by a host name a secret is bound to.
const dns = require("node:dns");
const lookup = dns.lookup;
dns.lookup = function testLookup(hostname, options, callback) {
  const done = typeof options === "function" ? options : callback;
  const opts = typeof options === "function" || typeof options === "number" ? {} : (options ?? {});
  if (typeof hostname === "string" && hostname.toLowerCase().endsWith(".keel.test")) {
    process.nextTick(() =>
      opts.all ? done(null, [{ address: "127.0.0.1", family: 4 }]) : done(null, "127.0.0.1", 4),
    );
    return {};
  }
  return lookup.call(this, hostname, options, callback);
};
// The promise form too (the egress policy's `resolveAllowed` uses it).
const promisesLookup = dns.promises.lookup;
dns.promises.lookup = function testPromisesLookup(hostname, options) {
  if (typeof hostname === "string" && hostname.toLowerCase().endsWith(".keel.test")) {
    const all = typeof options === "object" && options !== null && options.all;
    return Promise.resolve(all ? [{ address: "127.0.0.1", family: 4 }] : { address: "127.0.0.1", family: 4 });
  }
  return promisesLookup.call(this, hostname, options);
};
