/** `keel mcp list <session>`: the MCP servers of the session's latest run and the tools it was offered. */
import { EXIT, UsageError } from "../../api-client/client";
import { type Command, parseCommand, printJson } from "../command";

export const mcpCommand: Command = {
  usage: "keel mcp list <session>",
  summary: "the MCP servers of the session's latest run and the tools it recorded (what the model saw)",
  async run(argv, context) {
    const [sub, ...rest] = argv;
    if (sub !== "list") throw new UsageError("usage: keel mcp list <session>");
    const parsed = parseCommand(rest, {}, { min: 1, max: 1, names: "<session>" }, context);
    const [sessionId] = parsed.positionals as [string];
    const { client } = parsed;
    const list = await client.json(
      client.api.v1.sessions[":sessionId"]["mcp-tools"].$get({ param: { sessionId } }),
    );
    if (parsed.json) {
      printJson(context, list);
      return EXIT.ok;
    }
    if (list.servers.length === 0) context.out.write("no MCP servers (or the run has not listed them yet)\n");
    for (const server of list.servers) {
      if (server.status === "unavailable") {
        context.out.write(`${server.server}: unavailable: ${server.error ?? ""}\n`);
        continue;
      }
      context.out.write(`${server.server}: ${server.tools?.length ?? 0} tools\n`);
      for (const tool of server.tools ?? []) context.out.write(`  ${tool.name}  [${tool.replay}]\n`);
    }
    return EXIT.ok;
  },
};
