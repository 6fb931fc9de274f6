/**
 * `keel webhook add|list|test|delete|deliveries|rotate`: the tenant's webhook endpoints
 * (docs/integrations.md, "Webhooks"). `add` and `rotate` print the signing secret, the only time
 * it is shown: keep it where the receiver verifies signatures.
 */
import { EXIT, type ExitCode, UsageError } from "../../api-client/client";
import { WEBHOOK_EVENT_TYPES } from "../../contracts/webhooks";
import type { WebhookDelivery, WebhookEndpoint } from "../../tenants/webhooks";
import { type Command, type CommandContext, parseCommand, printJson } from "../command";

const EVENT_NAMES = [...WEBHOOK_EVENT_TYPES, "*"] as readonly string[];

function describe(endpoint: WebhookEndpoint): string {
  const disabled = endpoint.disabledAt ? `  DISABLED (410 Gone) ${endpoint.disabledAt}` : "";
  const overlap = endpoint.previousSecretExpiresAt
    ? `  old secret until ${endpoint.previousSecretExpiresAt}`
    : "";
  return `${endpoint.id}  ${endpoint.url}  ${endpoint.events.join(",")}${overlap}${disabled}`;
}

function describeDelivery(delivery: WebhookDelivery): string {
  const answer = delivery.lastResponse?.status ?? delivery.lastResponse?.error ?? "-";
  const next = delivery.nextAttemptAt ? `  next ${delivery.nextAttemptAt}` : "";
  return `${delivery.createdAt}  ${delivery.eventType}  ${delivery.sessionId}  ${delivery.status}  ${delivery.attempts} attempt(s)  last ${answer}${next}  ${delivery.eventId}`;
}

async function add(argv: string[], context: CommandContext): Promise<ExitCode> {
  const parsed = parseCommand(
    argv,
    { event: { type: "string", multiple: true }, description: { type: "string" } },
    { min: 1, max: 1, names: "<URL>" },
    context,
  );
  const events = (parsed.values.event as string[] | undefined) ?? [];
  if (events.length === 0) throw new UsageError(`name at least one --event (${EVENT_NAMES.join(", ")})`);
  const unknown = events.find((event) => !EVENT_NAMES.includes(event));
  if (unknown) throw new UsageError(`unknown event ${unknown}: one of ${EVENT_NAMES.join(", ")}`);
  const description = parsed.values.description as string | undefined;
  const created = await parsed.client.addWebhook({
    url: parsed.positionals[0] as string,
    events,
    ...(description ? { description } : {}),
  });
  if (parsed.json) printJson(context, created);
  else context.out.write(`added ${describe(created)}\nsigning secret (shown only now): ${created.secret}\n`);
  return EXIT.ok;
}

async function list(argv: string[], context: CommandContext): Promise<ExitCode> {
  const parsed = parseCommand(argv, {}, { min: 0, max: 0, names: "no arguments" }, context);
  const webhooks = await parsed.client.listWebhooks();
  if (parsed.json) printJson(context, { webhooks });
  else if (webhooks.length === 0) context.out.write("no webhook endpoints\n");
  else for (const endpoint of webhooks) context.out.write(`${describe(endpoint)}\n`);
  return EXIT.ok;
}

async function withId(
  argv: string[],
  context: CommandContext,
  options: Parameters<typeof parseCommand>[1] = {},
) {
  const parsed = parseCommand(argv, options, { min: 1, max: 1, names: "<ID>" }, context);
  return { parsed, id: parsed.positionals[0] as string };
}

async function test(argv: string[], context: CommandContext): Promise<ExitCode> {
  const { parsed, id } = await withId(argv, context);
  const event = await parsed.client.testWebhook(id);
  if (parsed.json) printJson(context, { event });
  else
    context.out.write(
      `sent ${event.type} ${event.id}: \`keel webhook deliveries ${id}\` shows its delivery\n`,
    );
  return EXIT.ok;
}

async function remove(argv: string[], context: CommandContext): Promise<ExitCode> {
  const { parsed, id } = await withId(argv, context);
  await parsed.client.deleteWebhook(id);
  if (parsed.json) printJson(context, { id, deleted: true });
  else context.out.write(`deleted webhook endpoint ${id}\n`);
  return EXIT.ok;
}

async function deliveries(argv: string[], context: CommandContext): Promise<ExitCode> {
  const { parsed, id } = await withId(argv, context);
  const listed = await parsed.client.webhookDeliveries(id);
  if (parsed.json) printJson(context, { deliveries: listed });
  else if (listed.length === 0) context.out.write("no deliveries\n");
  else for (const delivery of listed) context.out.write(`${describeDelivery(delivery)}\n`);
  return EXIT.ok;
}

async function rotate(argv: string[], context: CommandContext): Promise<ExitCode> {
  const { parsed, id } = await withId(argv, context, { overlap: { type: "string" } });
  const overlapText = parsed.values.overlap as string | undefined;
  const overlap = overlapText === undefined ? undefined : Number(overlapText);
  if (overlap !== undefined && !(Number.isInteger(overlap) && overlap >= 0))
    throw new UsageError("--overlap is a whole number of seconds (0 ends the old secret now)");
  const rotated = await parsed.client.rotateWebhook(id, overlap);
  if (parsed.json) printJson(context, rotated);
  else
    context.out.write(
      `rotated ${describe(rotated.endpoint)}\nnew signing secret (shown only now): ${rotated.secret}\n`,
    );
  return EXIT.ok;
}

const HELP = `Subcommands:
  add URL --event TYPE [--event TYPE2 …] [--description TEXT]
                 subscribe URL (https://) to event types; prints the signing secret once.
                 Types: ${EVENT_NAMES.join(", ")}
  list           the endpoints: id, URL, event types (never secrets)
  test ID        send a webhook.test event to the endpoint
  deliveries ID  its latest deliveries: status, attempts, last answer, next attempt
  rotate ID [--overlap SECONDS]
                 a new signing secret (printed once); the old one keeps signing beside it
                 for the overlap (default one day)
  delete ID      delete the endpoint

Deliveries are signed per Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature):
verify them with any Standard Webhooks library and the secret (docs/integrations.md, "Webhooks").`;

export const webhookCommand: Command = {
  usage: "keel webhook add|list|test|delete|deliveries|rotate …",
  summary: "webhook endpoints: signed, durable deliveries of run, approval, schedule and session events",
  help: HELP,
  run(argv, context) {
    const [sub, ...rest] = argv;
    switch (sub) {
      case "add":
        return add(rest, context);
      case "list":
        return list(rest, context);
      case "test":
        return test(rest, context);
      case "delete":
        return remove(rest, context);
      case "deliveries":
        return deliveries(rest, context);
      case "rotate":
        return rotate(rest, context);
      default:
        throw new UsageError(sub === undefined ? "name a subcommand" : `unknown subcommand '${sub}'`);
    }
  },
};
