#!/usr/bin/env node
/** The `keel` command. */
import { runDev } from "./dev";

const usage = `Usage: keel <command>

Commands:
  dev     run the local stack (Temporal dev server with UI, S3 server) until Ctrl-C
`;

async function main(argv: string[]): Promise<number> {
  const [command] = argv;
  switch (command) {
    case "dev":
      await runDev();
      return 0;
    case undefined:
    case "help":
    case "--help":
      process.stdout.write(usage);
      return 0;
    default:
      process.stderr.write(`keel: unknown command '${command}'\n${usage}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`keel: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
