/** `keel events`: the events of a session's latest run, once or followed live. */
import { EXIT } from "../../api-client/client";
import { type Command, integerOption, parseCommand } from "../command";
import { EventPrinter } from "../render";
import { EventDetails, followRun, readEventsPage } from "./follow";

export const eventsCommand: Command = {
  usage: "keel events <session> [--follow [--no-stream]] [--after N] [--json]",
  summary:
    "the latest run's events after seq N; --follow streams them until the run ends (and waits for a session not created yet)",
  help: "With --json every event is one JSON object per line (JSON Lines), with or without --follow. --follow shows the answer as it is written and bash output as it comes; --no-stream shows whole messages only.",
  async run(argv, context) {
    const parsed = parseCommand(
      argv,
      {
        follow: { type: "boolean", short: "f", default: false },
        "no-stream": { type: "boolean", default: false },
        after: { type: "string" },
      },
      { min: 1, max: 1, names: "<session>" },
      context,
    );
    const [sessionId] = parsed.positionals as [string];
    const after = integerOption(parsed.values.after as string | undefined, "after") ?? 0;
    const printer = new EventPrinter(context.out, parsed.json, sessionId);
    const details = parsed.json ? undefined : new EventDetails(parsed.client, sessionId);
    if (parsed.values.follow) {
      const status = await followRun(parsed.client, sessionId, after, printer, {
        details,
        deltas: !parsed.values["no-stream"],
        err: context.err,
        waitForSession: true,
      });
      return status === undefined || status === "completed" ? EXIT.ok : EXIT.failed;
    }
    const page = await readEventsPage(parsed.client, sessionId, after);
    for (const event of page.events) printer.print(details ? await details.complete(event) : event);
    printer.done();
    if (!page.runEnded) context.err(`(run still live; continue with --after ${page.lastSeq} or --follow)\n`);
    return EXIT.ok;
  },
};
