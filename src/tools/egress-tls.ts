/**
 * The certificates of one tool call's egress proxy (docs/tools.md, "Secrets"): a CA made for the
 * call alone, trusted only inside that call's sandbox, and a leaf certificate per host the proxy
 * terminates TLS for (the hosts the call's secrets are bound to), made on first use and kept for
 * the call. ECDSA P-256 over Node's webcrypto, certificates built by `@peculiar/x509`. The CA's
 * private key never leaves the worker's memory and is dropped with the call; the CA is limited by
 * name constraints to the hosts of the call's secrets, so even a leaked key could not vouch for
 * another name. Loaded only by a call with secrets (the x509 library is not small).
 */
import "reflect-metadata";
import { randomBytes, webcrypto } from "node:crypto";
import { readFileSync } from "node:fs";
import * as tls from "node:tls";
import { AsnConvert } from "@peculiar/asn1-schema";
import {
  GeneralName,
  GeneralSubtree,
  GeneralSubtrees,
  id_ce_nameConstraints,
  NameConstraints,
} from "@peculiar/asn1-x509";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const ALGORITHM = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
/** How long the call CA and its leaves are valid: longer than any call, short enough to be worthless later. */
const VALIDITY_MS = 24 * 60 * 60 * 1000;
/** Backdating, for clocks inside the sandbox a little behind the worker's. */
const CLOCK_SKEW_MS = 5 * 60 * 1000;

/** One call's CA: its certificate (PEM) and the TLS context for each host it serves. */
export interface CallCa {
  /** The CA certificate, PEM: what the sandbox trusts. */
  certificatePem: string;
  /** The server-side TLS context presenting a leaf for `host` (made on first use, then cached). */
  contextFor(host: string): Promise<tls.SecureContext>;
}

const serial = () => {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] as number) & 0x7f; // positive
  return bytes.toString("hex");
};

async function generateKeys(): Promise<webcrypto.CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
}

async function privateKeyPem(key: webcrypto.CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey("pkcs8", key));
  const lines = der.toString("base64").match(/.{1,64}/g) ?? [];
  return `-----BEGIN PRIVATE KEY-----\n${lines.join("\n")}\n-----END PRIVATE KEY-----\n`;
}

/** The critical name-constraints extension permitting `names` (and their subdomains) only. */
function nameConstraints(hostNames: readonly string[]): x509.Extension {
  const names = [...new Set(hostNames)];
  const permitted = new GeneralSubtrees(
    names.map((name) => new GeneralSubtree({ base: new GeneralName({ dNSName: name }) })),
  );
  return new x509.Extension(
    id_ce_nameConstraints,
    true,
    AsnConvert.serialize(new NameConstraints({ permittedSubtrees: permitted })),
  );
}

/**
 * Makes the CA of one call, constrained to `hostNames` and their subdomains (the `host` of each
 * allowlist entry its secrets are bound to: `*.example.com` gives example.com); none, no
 * constraint. Leaves share one key pair per call.
 */
export async function createCallCa(hostNames: readonly string[]): Promise<CallCa> {
  const now = Date.now();
  const notBefore = new Date(now - CLOCK_SKEW_MS);
  const notAfter = new Date(now + VALIDITY_MS);
  const [caKeys, leafKeys] = await Promise.all([generateKeys(), generateKeys()]);
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=Keel egress proxy call CA ${randomBytes(4).toString("hex")}, O=Keel`,
    notBefore,
    notAfter,
    keys: caKeys,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
      ...(hostNames.length > 0 ? [nameConstraints(hostNames)] : []),
    ],
  });
  const leafKeyPem = await privateKeyPem(leafKeys.privateKey);
  const authorityKeyId = await x509.AuthorityKeyIdentifierExtension.create(caKeys.publicKey);
  const leafKeyId = await x509.SubjectKeyIdentifierExtension.create(leafKeys.publicKey);
  const caPem = ca.toString("pem");
  const contexts = new Map<string, Promise<tls.SecureContext>>();

  const makeContext = async (host: string): Promise<tls.SecureContext> => {
    const leaf = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: `CN=${host}`,
      issuer: ca.subject,
      notBefore,
      notAfter,
      publicKey: leafKeys.publicKey,
      signingKey: caKeys.privateKey,
      signingAlgorithm: ALGORITHM,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth], false),
        new x509.SubjectAlternativeNameExtension([{ type: "dns", value: host }], false),
        authorityKeyId,
        leafKeyId,
      ],
    });
    return tls.createSecureContext({ key: leafKeyPem, cert: `${leaf.toString("pem")}\n${caPem}` });
  };

  return {
    certificatePem: caPem,
    contextFor: (host) => {
      const name = host.toLowerCase().replace(/\.$/, "");
      let context = contexts.get(name);
      if (!context) {
        context = makeContext(name);
        contexts.set(name, context);
      }
      return context;
    },
  };
}

let systemRoots: string | undefined;

/**
 * The certificates a public client trusts on this worker, PEM: the system bundle (`bundleFile`)
 * when present, else Node's own roots. Read once per process.
 * @public (egress-proxy.ts loads this module lazily, with require, where knip cannot follow)
 */
export function systemTrustPem(bundleFile: string): string {
  if (systemRoots === undefined) {
    try {
      systemRoots = readFileSync(bundleFile, "utf8");
    } catch {
      systemRoots = tls.rootCertificates.join("\n");
    }
  }
  return systemRoots;
}

let lastTrust: { extraCaPem?: string; context: tls.SecureContext } | undefined;

/**
 * The TLS context the proxy verifies upstream servers with: the system store plus `extraCaPem`.
 * Parsing the system store takes tens of milliseconds; the context is kept for the next call
 * with the same extra CA (the store is read once per process anyway).
 * @public (loaded lazily by egress-proxy.ts)
 */
export function upstreamTrust(bundleFile: string, extraCaPem?: string): tls.SecureContext {
  if (lastTrust?.extraCaPem !== extraCaPem || !lastTrust) {
    const ca = extraCaPem ? [systemTrustPem(bundleFile), extraCaPem] : systemTrustPem(bundleFile);
    lastTrust = { extraCaPem, context: tls.createSecureContext({ ca }) };
  }
  return lastTrust.context;
}
