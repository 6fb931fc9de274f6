/** `keel delete`: removes a session and everything stored for it (entries, workspace snapshots). */
import { EXIT } from "../../api-client/client";
import { type Command, parseCommand, printJson } from "../command";

export const deleteCommand: Command = {
  usage: "keel delete <session>",
  summary: "delete an idle session: its entries and workspace snapshots in S3 (cannot be undone)",
  async run(argv, context) {
    const parsed = parseCommand(argv, {}, { min: 1, max: 1, names: "<session>" }, context);
    const [sessionId] = parsed.positionals as [string];
    const { client } = parsed;
    const deleted = await client.json(client.api.v1.sessions[":sessionId"].$delete({ param: { sessionId } }));
    if (parsed.json) printJson(context, deleted);
    else context.out.write(`deleted session ${sessionId} (${deleted.deletedObjects} objects)\n`);
    return EXIT.ok;
  },
};
