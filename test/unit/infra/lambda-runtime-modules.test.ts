/**
 * The Lambda worker's package: every `@temporalio/*` package its bundled code loads at run time
 * (they are kept out of the bundle) is among the packages `copy-runtime-modules.ts` copies in.
 * A package missing there fails the deployed function when it loads its handler.
 */
import { sep } from "node:path";
import { build } from "esbuild";
import { runtimeClosure } from "../../../infra/bundling/copy-runtime-modules";
import { EXTERNAL_PACKAGES, LAMBDA_WORKER_ENTRY } from "../../../infra/lib/lambda-workers";
import { REPO_ROOT } from "../../../infra/lib/runtime";

jest.setTimeout(60_000);

/** `@scope/name` of an import path such as `@temporalio/interceptors-opentelemetry/lib/worker`. */
const packageOf = (path: string) => path.split("/").slice(0, 2).join("/");

test("every package the bundled Lambda worker requires at run time is copied into its package", async () => {
  const result = await build({
    entryPoints: [`${REPO_ROOT}/${LAMBDA_WORKER_ENTRY}`],
    bundle: true,
    platform: "node",
    format: "cjs",
    external: EXTERNAL_PACKAGES,
    write: false,
    metafile: true,
    logLevel: "silent",
  });
  const required = new Set(
    Object.values(result.metafile.inputs).flatMap((input) =>
      input.imports.filter((found) => found.external).map((found) => packageOf(found.path)),
    ),
  );
  const copied = new Set(
    runtimeClosure().map((dir) => dir.split(`${sep}node_modules${sep}`).at(-1)?.split(sep).join("/")),
  );
  const temporal = [...required].filter((name) => name.startsWith("@temporalio/"));
  expect(temporal).toEqual(
    expect.arrayContaining(["@temporalio/worker", "@temporalio/interceptors-opentelemetry"]),
  );
  expect(temporal.filter((name) => !copied.has(name))).toEqual([]);
});
