// "Context you can see": the stacked bar under a coworker's reply, and the report dialog it opens.
// Everything from the server is set with textContent; nothing here builds HTML from data. The one
// exception is a summary's HTML, rendered and sanitized on the server as messages are.

// The same names as office.views.LAYER_TITLES, so the bar's tooltips and the dialog agree.
export const LAYERS = [
  ["system", "Instructions", "Who they are, the office, this channel and who is in it"],
  ["memory", "Memory", "Facts the office remembers"],
  ["summary", "Summary", "Older tasks in short: the summary, notes on tasks not summarized yet, a note carried from the previous conversation"],
  ["recent", "Recent tasks", "The latest tasks, in full"],
  ["recalled", "Recalled", "Earlier work found for this message, and facts remembered since the summary"],
  ["current", "This task", "Your message and the work done on it so far"],
];

const data = JSON.parse(document.getElementById("channel-data")?.textContent || "{}");
const cache = new Map(); // "session:turn" -> Promise of the endpoint's JSON

const fmt = (n) => (typeof n === "number" ? n.toLocaleString("en-US") : "—");
const amount = (chars, tokens) => `${fmt(chars)} characters` + (typeof tokens === "number" ? ` · ~${fmt(tokens)} tokens` : "");
const plainAmount = (chars, budget, tokens) => {
  const limit = typeof budget === "number" ? budget : null;
  if (!chars) return limit === null ? "none" : `none (room for ${fmt(limit)} characters)`;
  return `${fmt(chars)}${limit === null ? "" : ` of ${fmt(limit)}`} characters` + (typeof tokens === "number" ? `, about ${fmt(tokens)} tokens` : "");
};

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key === "style") node.style.cssText = value;
    else if (key === "dataset") {
      for (const [name, v] of Object.entries(value)) if (v !== undefined && v !== null) node.dataset[name] = String(v);
    }
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** The bar's data from a stored prompt report (same shape as office.views.bar). */
export function barFromReport(report) {
  const layers = (report && report.layers) || {};
  const segments = LAYERS.map(([name]) => {
    const layer = layers[name] || {};
    return { name, chars: Number(layer.chars) || 0, tokens: typeof layer.tokens === "number" ? layer.tokens : null };
  });
  const total = report.total_chars ?? segments.reduce((sum, s) => sum + s.chars, 0);
  return { segments, total_chars: total, estimated_tokens: report.estimated_tokens ?? null };
}

export function renderBar(bar, turn) {
  const label = amount(bar.total_chars, bar.estimated_tokens);
  const track = el("span", { class: "ctx-track" });
  for (const s of bar.segments) {
    if (!s.chars) continue;
    const name = LAYERS.find(([n]) => n === s.name)?.[1] || s.name;
    track.append(el("span", { class: `seg seg-${s.name}`, style: `flex-grow: ${s.chars}`, title: `${name}: ${amount(s.chars, s.tokens)}` }));
  }
  return el(
    "button",
    { type: "button", class: "ctxbar", "data-report": String(turn), title: `Context: ${label}`, "aria-label": `What this prompt was made of: ${label}. Open the report.` },
    track,
    el("span", { class: "ctx-label", text: `Context · ${label}` }),
  );
}

export function fetchReport(sessionId, turn) {
  const key = `${sessionId}:${turn}`;
  if (!cache.has(key)) {
    const url = data.reportUrl.replace("{turn}", encodeURIComponent(turn)) + (sessionId ? `?session=${encodeURIComponent(sessionId)}` : "");
    const request = fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } }).then((response) => {
      if (!response.ok) throw new Error(`The report could not be loaded (HTTP ${response.status}).`);
      return response.json();
    });
    // A failure is not cached: the next click tries again.
    request.catch(() => cache.delete(key));
    cache.set(key, request);
  }
  return cache.get(key);
}

export function forgetReport(sessionId, turn) {
  cache.delete(`${sessionId}:${turn}`);
}

export async function openReport(sessionId, turn, opener) {
  const dialog = document.getElementById("report-dialog");
  const body = document.getElementById("report-body");
  const title = document.getElementById("report-title");
  title.textContent = `What the prompt for task ${turn} was made of`;
  body.replaceChildren(el("p", { class: "muted", text: "Loading…" }));
  if (!dialog.open) dialog.showModal();
  try {
    const answer = await fetchReport(sessionId, turn);
    const who = data.coworkers?.[answer.coworker]?.name || answer.coworker;
    if (who) title.textContent = `What ${who} saw for task ${turn}`;
    body.replaceChildren(...reportContent(answer));
  } catch (error) {
    body.replaceChildren(el("p", { class: "error", text: error.message }));
  }
  dialog.addEventListener("close", () => opener?.focus(), { once: true });
}

// "none" reads the same in every row of the dialog.
const none = (text = "none") => el("span", { class: "muted none", text });

function recalledSummary(exchanges) {
  if (!exchanges.length) return none();
  const earlier = exchanges.filter((x) => x.earlier_session).length;
  const here = exchanges.length - earlier;
  const parts = [];
  if (here) parts.push(`${here} from this conversation`);
  if (earlier) parts.push(`${earlier} from earlier ones`);
  return `${exchanges.length} exchange${exchanges.length > 1 ? "s" : ""} (${parts.join(", ")}), listed below`;
}

function turnChips(turns) {
  if (!turns || !turns.length) return none();
  return el("span", { class: "turns" }, turns.map((t) => el("span", { class: "t", text: `#${t}` })));
}

// Where a remembered fact was in the prompt (office.views.task_report: "layer").
const MEMORY_PLACES = {
  memory: "in the memory part",
  recalled: "new since the summary, shown with this message",
  kept: "shown with an earlier task, still in the prompt",
};

function reportContent(answer) {
  const report = answer.report;
  const overview = answer.overview || {};
  const parts = [];
  if (!report) {
    parts.push(el("p", { class: "muted", text: "This task has no prompt report yet: it may still be waiting to run." }));
  } else {
    // One plain sentence first, made on the server from the same report the bar is drawn from.
    parts.push(el("p", { class: "report-sentence", text: overview.sentence || "" }));
    const layers = report.layers || {};
    const track = el("div", { class: "big-track", role: "img", "aria-label": "Share of each part of the prompt" });
    const legend = el("ul", { class: "legend" });
    for (const [name, label, description] of LAYERS) {
      const layer = layers[name] || {};
      const chars = Number(layer.chars) || 0;
      const tokens = typeof layer.tokens === "number" ? layer.tokens : null;
      // Recall has no fixed budget of its own: it takes the room the other layers leave.
      let amountText = plainAmount(chars, name === "recalled" ? null : layer.budget, tokens);
      // A fact can reach the prompt outside the memory part (with an earlier task, or with this message):
      // the Memory row still counts it, so it agrees with the sentence on top.
      if (name === "memory" && overview.memory_elsewhere) amountText = chars ? `${amountText}; ${overview.memory_elsewhere}` : overview.memory_elsewhere;
      if (chars) track.append(el("span", { class: `seg seg-${name}`, style: `flex-grow: ${chars}`, title: `${label}: ${amount(chars, tokens)}` }));
      legend.append(
        el("li", { title: description, dataset: { layer: name } },
          el("span", { class: `swatch seg-${name}` }),
          el("span", { text: label }),
          el("span", { class: "num", text: amountText }),
        ),
      );
    }
    parts.push(track, legend);
    if (overview.total) parts.push(el("p", { class: "muted", text: overview.total }));

    parts.push(el("h3", { text: "Earlier tasks in this prompt" }));
    const through = report.summarized_through || 0;
    parts.push(
      el("dl", {},
        el("dt", { text: "In full" }), el("dd", {}, turnChips(report.detailed_tasks || layers.recent?.tasks)),
        el("dt", { text: "As short notes" }), el("dd", {}, turnChips(report.digested_tasks)),
        el("dt", { text: "In the summary" }), el("dd", {}, through ? (through > 1 ? `tasks 1–${through}` : "task 1") : none()),
        el("dt", { text: "Found for your message" }), el("dd", {}, recalledSummary(layers.recalled?.exchanges || [])),
        el("dt", { text: "Recalled earlier, still shown" }), el("dd", {}, overview.kept_recall || none()),
      ),
    );
    const exchanges = layers.recalled?.exchanges || [];
    if (exchanges.length) {
      parts.push(el("h3", { text: "Recalled exchanges, and why: the words that matched, or the meaning" }));
      parts.push(
        el("ul", { class: "recalled-list" },
          exchanges.map((x) =>
            el("li", {},
              el("span", { text: `Task ${x.turn} of ${x.earlier_session ? "an earlier conversation" : "this conversation"}${x.when ? `, ${x.when}` : ""}: ` }),
              x.matched.length
                ? el("span", {}, x.matched.flatMap((word, i) => (i ? [", ", el("mark", { text: word })] : [el("mark", { text: word })])))
                : el("span", { class: "muted", text: x.meaning ? `close in meaning (${x.meaning.toFixed(2)}), no word in common` : "it goes on with the exchange next to it" }),
              x.matched.length && x.meaning ? el("span", { class: "muted", text: ` (meaning ${x.meaning.toFixed(2)})` }) : null,
            ),
          ),
        ),
      );
    }
  }

  parts.push(el("h3", { text: "Summary the model saw" }));
  for (const line of overview.summary || []) parts.push(el("p", { class: "muted", text: line }));
  if (answer.summary) {
    const s = answer.summary;
    if (s.written_by) parts.push(el("p", { class: "muted", text: s.written_by }));
    parts.push(summaryText(s));
  } else if (report && report.summarized_through) {
    parts.push(el("p", { class: "muted", text: "Its text is no longer stored." }));
  }
  if (answer.carried_note) parts.push(summaryText(answer.carried_note));

  parts.push(el("h3", { text: "Remembered facts used" }));
  if (answer.memory_items && answer.memory_items.length) {
    parts.push(
      el("ul", { class: "mem-list" },
        answer.memory_items.map((item) =>
          el("li", {},
            el("span", { class: `chip kind-${item.kind}`, text: item.kind }), " ",
            item.pinned ? el("span", { class: "chip pin", text: "pinned" }) : null, item.pinned ? " " : null,
            el("span", { text: item.text }),
            el("span", { class: "muted", text: ` · ${item.scope_name} · ${MEMORY_PLACES[item.layer] || item.layer}${item.active ? "" : " · deleted since"}` }),
          ),
        ),
      ),
    );
  } else {
    parts.push(el("p", { class: "muted", text: "No remembered facts were in this prompt." }));
  }

  const u = answer.usage || {};
  parts.push(el("h3", { text: "Tokens and cost" }));
  const estimated = overview.offline ? " (estimated)" : "";
  parts.push(
    el("dl", {},
      el("dt", { text: "Model" }), el("dd", { text: overview.model || u.model || "—" }),
      el("dt", { text: "Input tokens" }), el("dd", { text: fmt(u.input_tokens) + estimated }),
      el("dt", { text: "Written to the cache" }), el("dd", { text: fmt(u.cache_write_tokens) }),
      el("dt", { text: "Read from the cache" }), el("dd", { text: fmt(u.cache_read_tokens) }),
      el("dt", { text: "Output tokens" }), el("dd", { text: fmt(u.output_tokens) + estimated }),
      el("dt", { text: "Cost" }), el("dd", { text: overview.cost || "—" }),
      ...(overview.cache_lifetime ? [el("dt", { text: "Cache kept" }), el("dd", { text: overview.cache_lifetime })] : []),
    ),
  );
  if (overview.input_tokens) parts.push(el("p", { class: "muted input-note", text: overview.input_tokens }));
  if (overview.cache) parts.push(el("p", { class: "muted cache-note", text: overview.cache }));
  if (overview.offline) parts.push(el("p", { class: "muted", text: "Answered offline: no model was called, so nothing was billed." }));

  if (report && report.notes && report.notes.length) {
    parts.push(el("h3", { text: "Notes" }), el("ul", { class: "notes" }, report.notes.map((n) => el("li", { text: String(n) }))));
  }
  return parts;
}

/** A summary or carried note as it reads: the server's sanitized HTML (office/markdown.py, nh3). */
function summaryText(part) {
  const node = el("div", { class: "summary-text md" });
  if (typeof part.html === "string") node.innerHTML = part.html;
  else node.textContent = part.text || "";
  return node;
}

/** Clicks on any context bar open its report; `sessionOf()` names the session it belongs to. */
export function wireReports(root, sessionOf) {
  root.addEventListener("click", (event) => {
    const button = event.target.closest("[data-report]");
    if (!button) return;
    openReport(sessionOf(button), Number(button.dataset.report), button);
  });
}

/** #turn-N in the address (from the memory page's "from … task N") scrolls to that instruction. */
export function showTurnFromHash(root) {
  const match = /^#turn-(\d+)$/.exec(location.hash);
  if (!match) return false;
  const target = root.querySelector(`.msg.user[data-turn="${match[1]}"]`) || root.querySelector(`[data-turn="${match[1]}"]`);
  if (!target) return false;
  target.scrollIntoView({ block: "center" });
  target.classList.add("highlight");
  return true;
}

// The past-conversation page has only this module: wire it up there.
if (data.readOnly) {
  const history = document.getElementById("history");
  wireReports(document, () => data.session);
  if (!showTurnFromHash(history)) history.scrollTop = history.scrollHeight;
}
