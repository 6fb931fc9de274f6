// Over 400 lines: shipped as the source text of one function (its hash is the page's CSP), so it cannot be split into modules.
/**
 * The session viewer's one browser script. `viewerClient` is shipped as its source text
 * (`../page.ts` inlines `viewerClient.toString()` and allows it by its hash), so it must not refer
 * to anything outside its own body: types only are imported.
 *
 * Safety: session content is attacker-controlled (model and tool output). It reaches the page
 * only through `textContent` and `setAttribute` of non-executable attributes; no HTML is ever
 * parsed from it. Links come from the operator's configuration only and must be http(s).
 *
 * Live mode (the page the API serves): asks for the API key, keeps it in sessionStorage (this tab
 * only, gone when it closes), sends it as `Authorization: Bearer`, reads
 * `GET /v1/sessions/{id}/view`, and while the run works follows `GET /v1/sessions/{id}/events`
 * (Server-Sent Events read with fetch: EventSource cannot send a header). Export mode: the view
 * model is embedded in the file, nothing is fetched.
 */
import type { ViewBlock, ViewModel, ViewNode, ViewUsage } from "../view-model";

/** What the page tells the script (embedded as JSON in `#keel-config`). */
export interface ViewerConfig {
  mode: "live" | "export";
  sessionId: string;
}

/** `GET /v1/sessions/{id}/view`: the view model and whether a run is working now. */
export type LiveViewModel = ViewModel & { status: "running" | "waiting_approval" | "paused" | "idle" };

export function viewerClient(): void {
  const KEY_STORAGE = "keel-api-key";
  /** Outputs longer than this are collapsed; their text is put in the DOM only when opened. */
  const LONG_LINES = 12;
  const LONG_CHARS = 1_500;
  const PREVIEW_CHARS = 120;
  /** Event types after which the stored session changed: the view is read again. */
  const CHANGES = new Set(["message_end", "tool_execution_end", "compaction_end", "agent_end"]);

  const config = readJson("keel-config") as ViewerConfig;
  const app = document.getElementById("app") as HTMLElement;
  const status = element("p", "status");
  const live = element("section", "live");
  live.id = "live";
  let current: ViewModel | undefined;
  /** The view read under way, and whether changes came while it was (see `refresh`). */
  let reading: Promise<unknown> | undefined;
  let readAgain = false;

  if (config.mode === "export") show(readJson("keel-view") as ViewModel);
  else if (sessionStorage.getItem(KEY_STORAGE)) void load(true);
  else askForKey();

  function readJson(id: string): unknown {
    return JSON.parse(document.getElementById(id)?.textContent ?? "null");
  }

  function element<K extends keyof HTMLElementTagNameMap>(
    tag: K,
    className?: string,
    text?: string,
  ): HTMLElementTagNameMap[K] {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function link(url: string, text: string): HTMLElement {
    // Operator-configured URLs only, and only http(s): never a javascript: URL.
    if (!/^https?:\/\//i.test(url)) return element("span", "", text);
    const anchor = element("a", "temporal", text);
    anchor.href = url;
    anchor.target = "_blank";
    anchor.rel = "noopener noreferrer";
    return anchor;
  }

  /**
   * A `task` call's sub-run: live, a link to the child session's viewer page (a sibling of this
   * page, same origin: the id is derived, not model text, and is encoded); in an export, its id.
   */
  function subRun(sessionId: string): HTMLElement {
    if (config.mode !== "live") return element("span", "sub-run", `sub-run: session ${sessionId}`);
    return link(new URL(encodeURIComponent(sessionId), location.href).href, `sub-run: session ${sessionId}`);
  }

  function askForKey(problem?: string): void {
    app.replaceChildren();
    const form = element("form", "key");
    const input = element("input");
    input.type = "password";
    input.name = "key";
    input.autocomplete = "off";
    input.placeholder = "API key";
    const button = element("button", "", "Show session");
    button.type = "submit";
    form.append(
      element("p", "", `Session ${config.sessionId}: enter your Keel API key (kept in this tab only).`),
      input,
      button,
    );
    if (problem) form.append(element("p", "error", problem));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      sessionStorage.setItem(KEY_STORAGE, input.value.trim());
      void load(true);
    });
    app.append(form);
    input.focus();
  }

  function authorization(): HeadersInit {
    return { authorization: `Bearer ${sessionStorage.getItem(KEY_STORAGE) ?? ""}` };
  }

  /** Reads and shows the view; with `follow`, follows the run when one is working. */
  async function load(follow: boolean): Promise<LiveViewModel | undefined> {
    // Relative to the page (`<api>/view/sessions/{id}`), so an API served under a path prefix works.
    const path = new URL(`../../v1/sessions/${encodeURIComponent(config.sessionId)}`, location.href).href;
    const response = await fetch(`${path}/view`, { headers: authorization() });
    if (response.status === 401) {
      sessionStorage.removeItem(KEY_STORAGE);
      askForKey("That key was refused.");
      return;
    }
    if (!response.ok) {
      const problem = `The session could not be read (HTTP ${response.status}).`;
      // A failed re-read keeps what is shown.
      if (current) status.textContent = problem;
      else app.replaceChildren(element("p", "error", problem));
      return;
    }
    const model = (await response.json()) as LiveViewModel;
    show(model);
    status.textContent = `status: ${model.status}`;
    if (follow && model.status !== "idle") void followRun(`${path}/events`);
    return model;
  }

  /**
   * Follows the run's event stream until the run ends. A stream that closes earlier (a proxy's
   * time limit, KEEL_API_SSE_MAX_SECONDS) is opened again after the last event seen
   * (`Last-Event-ID`), so nothing is missed or shown twice.
   */
  async function followRun(url: string): Promise<void> {
    let lastId = "";
    let ended = false;
    while (!ended) {
      const resume: Record<string, string> = lastId ? { "last-event-id": lastId } : {};
      const response = await fetch(url, {
        headers: { ...authorization(), ...resume, accept: "text/event-stream" },
      });
      if (!response.ok || !response.body) return;
      status.textContent = "status: running (following live)";
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffered = "";
      let events = 0;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffered += value;
        for (let end = buffered.indexOf("\n\n"); end >= 0; end = buffered.indexOf("\n\n")) {
          const event = parseFrame(buffered.slice(0, end));
          buffered = buffered.slice(end + 2);
          if (!event) continue;
          events += 1;
          lastId = event.id || lastId;
          ended ||= event.type === "agent_end";
          handleEvent(event.type, event.data);
        }
      }
      const model = await refreshNow();
      ended ||= model?.status === "idle" || events === 0;
    }
    status.textContent = "status: run ended";
  }

  /** One Server-Sent Events frame: its type, id and JSON data; undefined for a comment. */
  function parseFrame(
    frame: string,
  ): { type: string; id: string; data: Record<string, unknown> } | undefined {
    let type = "";
    let id = "";
    let data = "";
    for (const line of frame.split("\n")) {
      if (line.startsWith("event:")) type = line.slice(6).trim();
      else if (line.startsWith("id:")) id = line.slice(3).trim();
      else if (line.startsWith("data:")) data += line.slice(5).trim();
    }
    return type && data ? { type, id, data: JSON.parse(data) as Record<string, unknown> } : undefined;
  }

  function handleEvent(type: string, event: Record<string, unknown>): void {
    if (type === "message_update") showDelta(event);
    else if (type === "tool_execution_update") {
      liveBlock(`tool-${String(event.toolCallId)}`, `${String(event.toolName)} (running)`).textContent =
        String(event.partial);
    } else if (CHANGES.has(type)) {
      // The stored result replaces the tool's running output.
      if (type === "tool_execution_end") liveBox(`tool-${String(event.toolCallId)}`)?.remove();
      refresh();
    }
  }

  function liveBox(key: string): HTMLElement | null {
    return live.querySelector<HTMLElement>(`[data-live="${CSS.escape(key)}"]`);
  }

  /** Reads the view again; one read at a time, and one more when changes came during it. */
  function refresh(): void {
    if (reading) {
      readAgain = true;
      return;
    }
    reading = load(false).finally(() => {
      reading = undefined;
      if (readAgain) {
        readAgain = false;
        refresh();
      }
    });
  }

  /** Reads the view again once every read under way has finished; its model. */
  async function refreshNow(): Promise<LiveViewModel | undefined> {
    while (reading) await reading;
    return load(false);
  }

  function showDelta(event: Record<string, unknown>): void {
    const delta = event.assistantMessageEvent as { type: string; contentIndex?: number; delta?: string };
    const box = liveBlock(`msg-${String(event.entryId)}`, "assistant (writing)");
    if (delta.type === "reset") box.textContent = "";
    else if (delta.delta !== undefined) box.textContent = (box.textContent ?? "") + delta.delta;
  }

  function liveBlock(key: string, title: string): HTMLElement {
    const existing = liveBox(key)?.querySelector("pre");
    if (existing) return existing;
    const box = element("div", "entry kind-live");
    box.dataset.live = key;
    const text = element("pre", "text");
    box.append(element("div", "title", title), text);
    live.append(box);
    return text;
  }

  function show(model: ViewModel): void {
    const started = performance.now();
    current = model;
    const byId = new Map(model.nodes.map((node) => [node.id, node]));
    const path: ViewNode[] = [];
    for (let id = model.leafId; id !== null; id = byId.get(id)?.parentId ?? null) {
      const node = byId.get(id);
      if (!node || path.includes(node)) break;
      path.push(node);
    }
    path.reverse();
    const main = element("main");
    renderPath(main, path, byId);
    // What streamed in and is now stored shows in the transcript; drop its live copy.
    for (const box of Array.from(live.querySelectorAll<HTMLElement>("[data-live^='msg-']"))) {
      if (byId.has((box.dataset.live ?? "").slice(4))) box.remove();
    }
    app.replaceChildren(summaryOf(model), status, main, live);
    document.body.dataset.renderMs = String(Math.round(performance.now() - started));
    document.body.dataset.entries = String(model.nodes.length);
  }

  function summaryOf(model: ViewModel): HTMLElement {
    const header = element("header");
    header.append(element("h1", "", `Session ${model.sessionId}`));
    const facts = [
      model.createdAt ? `created ${model.createdAt}` : "",
      model.cwd ? `cwd ${model.cwd}` : "",
      `${model.nodes.length} entries`,
      `${model.totals.modelCalls} model calls`,
      `${model.totals.toolCalls} tool calls`,
      usageText(model.totals.usage),
    ].filter(Boolean);
    header.append(element("p", "facts", facts.join(" · ")));
    if (model.temporalRunsUrl) header.append(link(model.temporalRunsUrl, "Runs in the Temporal UI"));
    return header;
  }

  /** Renders `path` in order; at each branch point, the other branches, built when opened. */
  function renderPath(container: HTMLElement, path: ViewNode[], byId: Map<string, ViewNode>): void {
    path.forEach((node, index) => {
      container.append(renderNode(node));
      const next = path[index + 1];
      const others = node.children.filter((id) => id !== next?.id);
      if (others.length > 0) container.append(branches(others, byId, next !== undefined));
    });
  }

  function branches(ids: string[], byId: Map<string, ViewNode>, other: boolean): HTMLElement {
    const what = `${other ? "other " : ""}branch${ids.length === 1 ? "" : "es"}`;
    return lazyDetails("branches", `↳ ${ids.length} ${what} from here`, (body) => {
      for (const id of ids) {
        const branch = element("section", "branch");
        const path = branchPath(id, byId);
        branch.append(element("div", "title", `branch from ${id} · ${path.length} entries`));
        renderPath(branch, path, byId);
        body.append(branch);
      }
    });
  }

  /** From `id` down to the newest leaf under it (the last child at each step). */
  function branchPath(id: string, byId: Map<string, ViewNode>): ViewNode[] {
    const path: ViewNode[] = [];
    for (let node = byId.get(id); node && !path.includes(node); ) {
      path.push(node);
      const last = node.children[node.children.length - 1];
      node = last === undefined ? undefined : byId.get(last);
    }
    return path;
  }

  function renderNode(node: ViewNode): HTMLElement {
    const article = element("article", `entry kind-${node.kind}`);
    article.id = `entry-${node.id}`;
    const title = element("div", "title");
    title.append(element("span", "kind", node.title), element("span", "time", node.timestamp));
    if (node.label) title.append(element("span", "label", node.label));
    if (node.usage) title.append(element("span", "usage", usageText(node.usage)));
    if (node.kind === "assistant" && current?.temporalRunsUrl)
      title.append(link(current.temporalRunsUrl, "model call in Temporal"));
    article.append(title);
    if (node.error) article.append(element("p", "error", node.error));
    for (const block of node.blocks) article.append(renderBlock(block));
    return article;
  }

  function renderBlock(block: ViewBlock): HTMLElement {
    switch (block.type) {
      case "text":
        return longText("text", "text", block.text);
      case "thinking":
        return lazyDetails("thinking", "thinking", (body) => body.append(element("pre", "", block.text)));
      case "summary":
        return longText("summary", "summary", block.text);
      case "output":
        return longText(block.error ? "output error" : "output", "output", block.text);
      case "diff":
        return lazyDetails("diff", "diff", (body) => body.append(diffOf(block.text)), true);
      case "image":
        return element("p", "image", `[image ${block.mimeType}]`);
      case "tool_call": {
        const call = element("div", "call");
        const head = element("div", "title");
        head.append(element("span", "tool", `→ ${block.name}`));
        if (block.id && current?.temporalRunsUrl)
          head.append(link(current.temporalRunsUrl, "tool call in Temporal"));
        if (block.subSession) head.append(subRun(block.subSession));
        call.append(head, longText("args", "arguments", block.args));
        return call;
      }
    }
  }

  /** Short text shown as is; long text collapsed behind a preview, built when opened. */
  function longText(className: string, what: string, text: string): HTMLElement {
    const lines = text.split("\n").length;
    if (lines <= LONG_LINES && text.length <= LONG_CHARS) return element("pre", className, text);
    const preview = text.slice(0, PREVIEW_CHARS).replace(/\s+/g, " ");
    return lazyDetails(className, `${what} (${lines} lines): ${preview}…`, (body) =>
      body.append(element("pre", "", text)),
    );
  }

  /** A <details> whose body `fill` builds the first time it opens (or at once when `open`). */
  function lazyDetails(
    className: string,
    summary: string,
    fill: (body: HTMLElement) => void,
    open = false,
  ): HTMLElement {
    const details = element("details", className);
    const body = element("div", "body");
    details.append(element("summary", "", summary), body);
    let filled = false;
    const fillOnce = () => {
      if (filled) return;
      filled = true;
      fill(body);
    };
    details.addEventListener("toggle", fillOnce);
    if (open) {
      fillOnce();
      details.open = true;
    }
    return details;
  }

  function diffOf(text: string): HTMLElement {
    const pre = element("pre", "diff");
    for (const line of text.split("\n")) {
      const kind = line.startsWith("+")
        ? "add"
        : line.startsWith("-")
          ? "del"
          : line.startsWith("@@")
            ? "hunk"
            : "";
      pre.append(element("span", kind, `${line}\n`));
    }
    return pre;
  }

  function usageText(usage: ViewUsage): string {
    const cache =
      usage.cacheRead + usage.cacheWrite > 0 ? ` (cache ${usage.cacheRead}r/${usage.cacheWrite}w)` : "";
    const cost = usage.cost === undefined ? "unpriced" : `$${usage.cost.toFixed(4)}`;
    return `${usage.input} in / ${usage.output} out${cache} · ${cost}`;
  }
}
