// The live channel page: one websocket, the conversation, the composer, the nudge and the context bars.
//
// The server renders the first paint (the active session's history); this script takes over from
// the socket's `session` frame. Safety rule: only the server's sanitized `html` is ever assigned
// to innerHTML. User text, streamed deltas, tool traffic and notices always go in as textContent.

import { barFromReport, el, fetchReport, forgetReport, renderBar, showTurnFromHash, wireReports } from "./report.js";
import { formatStreaming } from "./stream-format.js";
import { wireMentions } from "./mentions.js";

const data = JSON.parse(document.getElementById("channel-data").textContent);
const $ = (id) => document.getElementById(id);
const history = $("history");
const input = $("composer-input");
const sendButton = $("send");
const hint = $("composer-hint");
const working = $("working");
const banner = $("banner");
const conn = $("conn");
const newSessionButton = $("new-session");
const empty = $("empty");

const TERMINAL = new Set(["done", "failed", "stopped"]);
const STATE_LABELS = { sending: "Sending…", waiting: "Waiting for connection", queued: "Queued", running: "Working", failed: "Failed", stopped: "Stopped", "not-sent": "Not sent", unconfirmed: "Not confirmed yet" };
const HINT = [...hint.childNodes].map((node) => node.cloneNode(true)); // the template's hint, restored when back online
const DRAFT_KEY = `vo:draft:${data.channel}`;

const state = {
  sessionId: data.session,
  haveSession: false, // a `session` frame has arrived on this page
  // The channel's seq when the server rendered the page: the socket resyncs from it, so events
  // between the first paint and the connection (a task finishing, say) are not missed.
  lastSeq: typeof data.seq === "number" ? data.seq : 0,
  knowSeq: typeof data.seq === "number",
  tasks: new Map(), // task id -> {id, turn, status, coworker, error}
  live: new Map(), // "task:coworker" -> live bubble (streaming, or partial after the task ended)
  pending: new Map(), // client_id -> {text, el}: sent, not yet stored
  callNames: new Map(), // tool call id -> tool name, for "Result of …"
  socket: null,
  retries: 0,
  retryTimer: null,
  countdown: null,
};

for (const task of data.tasks || []) state.tasks.set(task.id, task);
for (const node of history.querySelectorAll("[data-call-id]")) state.callNames.set(node.dataset.callId, node.dataset.callName);

// Helpers -----------------------------------------------------------------------------------------

const coworkerName = (slug) => (slug && data.coworkers[slug]?.name) || slug || "Coworker";
const coworkerColour = (slug) => (slug && data.coworkers[slug]?.colour) || "#6366f1";
const isOpen = () => state.socket && state.socket.readyState === WebSocket.OPEN;
const byId = (id) => (id ? history.querySelector(`[data-id="${CSS.escape(String(id))}"]`) : null);

function newClientId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function atBottom() {
  return history.scrollHeight - history.scrollTop - history.clientHeight < 120;
}

/** Run a DOM change, keeping the view pinned to the newest message if it was. */
function keepingScroll(change) {
  const stick = atBottom();
  const result = change();
  if (stick) history.scrollTop = history.scrollHeight;
  return result;
}

function send(frame) {
  if (!isOpen()) return false;
  state.socket.send(JSON.stringify(frame));
  return true;
}

function timeElement(iso) {
  const t = el("time", { datetime: iso || new Date().toISOString() });
  const when = iso ? new Date(iso) : new Date();
  t.textContent = when.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  t.title = when.toLocaleString();
  t.dataset.localized = "1";
  return t;
}

function updateEmpty() {
  empty.hidden = Boolean(history.querySelector(".msg"));
}

function updateTaskCount(turn) {
  const node = $("task-count");
  if (!node || !turn) return;
  const current = Number(node.dataset.count ?? /\d+/.exec(node.textContent)?.[0] ?? 0);
  if (turn <= current) return;
  node.dataset.count = String(turn);
  node.textContent = `${turn} task${turn === 1 ? "" : "s"} in this conversation`;
}

// Rendering records ---------------------------------------------------------------------------------

function othersName(message) {
  const author = message.author;
  return author && String(author.id) !== document.body.dataset.me ? author.name || "" : "";
}

function userElement(message, html) {
  let text = el("div", { class: "text", text: message.content });
  if (typeof html === "string" && html) {
    text = el("div", { class: "text md" });
    text.innerHTML = html; // sanitized by the server (office/markdown.py), as a coworker's
    window.decorateCode?.(text);
  }
  return el(
    "article",
    // The words as typed (data-content): retry and the past-conversation title read them, not the rendered text.
    { class: "msg user", id: message.id ? `m-${message.id}` : null, dataset: { id: message.id, turn: message.turn, role: "user", content: message.content } },
    // An instruction the person did not type names who wrote it: a handoff or a meeting's follow-up
    // (handed on), or someone else in a shared channel (by name; the frame says who, the page who is "You").
    el("div", { class: "avatar sm me-avatar", "aria-hidden": "true", text: message.sent_by ? "↪" : (othersName(message) || document.querySelector(".signout .me")?.textContent || "Y").trim()[0].toUpperCase() }),
    el(
      "div",
      { class: "bubble" },
      el("header", {}, el("span", { class: "who", text: message.sent_by || othersName(message) || "You" }), " ", timeElement(message.created_at), el("span", { class: "task-state", "data-task-state": true })),
      text,
      message.asked_again ? el("p", { class: "origin", text: "Asked again with Regenerate: a new reply, the earlier one kept above" }) : null,
    ),
  );
}

// As the server shows them (office/views.py, args_shown): indented when short, cut when long.
const ARGS_SHOWN_CHARS = 4000;
function argsShown(args) {
  const compact = JSON.stringify(args);
  const shown = compact.length <= ARGS_SHOWN_CHARS ? JSON.stringify(args, null, 2) : compact;
  return shown.length <= ARGS_SHOWN_CHARS ? shown : `${shown.slice(0, ARGS_SHOWN_CHARS)}… (${compact.length.toLocaleString("en")} characters in all)`;
}

function toolCallsList(calls) {
  return el(
    "ul",
    { class: "tool-calls" },
    calls.map((call) => {
      state.callNames.set(call.id, call.name);
      const args = call.args || {};
      const first = Object.values(args)[0];
      let preview = first === undefined ? "" : typeof first === "string" ? first : JSON.stringify(first);
      if (preview.length > 60) preview = preview.slice(0, 59) + "…";
      return el(
        "li",
        { dataset: { callId: call.id, callName: call.name } },
        el(
          "details",
          { class: "tool-call" },
          el("summary", {}, el("span", { class: "gear", "aria-hidden": "true", text: "⚙" }), " ", el("code", { text: call.name }), preview ? " " : null, preview ? el("span", { class: "muted", text: preview }) : null),
          el("pre", { text: argsShown(args) }),
        ),
      );
    }),
  );
}

function assistantElement(message, html) {
  const calls = message.tool_calls || [];
  const steps = calls.length > 0 && !message.content;
  const bubble = el("div", { class: "bubble" }, el("header", {}, el("span", { class: "who", text: coworkerName(message.coworker) }), " ", timeElement(message.created_at)));
  if (message.content) {
    const text = el("div", { class: "text md" });
    if (typeof html === "string") {
      text.innerHTML = html; // sanitized by the server (office/markdown.py)
      window.decorateCode?.(text);
    } else {
      text.textContent = message.content;
      text.style.whiteSpace = "pre-wrap";
    }
    bubble.append(text, el("div", { class: "msg-actions" }, el("button", { type: "button", class: "link", "data-copy": "reply", "aria-label": "Copy this reply", text: "Copy" })));
  }
  if (calls.length) bubble.append(toolCallsList(calls));
  if (!calls.length) bubble.append(el("footer", { class: "ctx", dataset: { turn: message.turn, coworker: message.coworker || "" } }));
  return el(
    "article",
    { class: `msg assistant${steps ? " steps" : ""}`, id: `m-${message.id}`, dataset: { id: message.id, turn: message.turn, role: "assistant", coworker: message.coworker || "" } },
    el("div", { class: "avatar sm", style: `--c: ${coworkerColour(message.coworker)}`, "aria-hidden": "true", text: coworkerName(message.coworker).charAt(0) }),
    bubble,
  );
}

function toolResultElement(message) {
  const content = message.content || "";
  return el(
    "details",
    { class: "msg tool-result", id: `m-${message.id}`, dataset: { id: message.id, turn: message.turn, role: "tool" } },
    el("summary", {}, el("span", { "aria-hidden": "true", text: "↳" }), " Result of ", el("code", { text: state.callNames.get(message.tool_call_id) || "a tool" }), " ", el("span", { class: "muted", text: `${content.length.toLocaleString("en-US")} characters` })),
    el("pre", { text: content.length > 4000 ? content.slice(0, 3999) + "…" : content }),
  );
}

function isNudge(message) {
  return message.role === "notice" && (message.content || "").startsWith(data.nudgeMark);
}

function noticeElement(message, html) {
  if (typeof html === "string" && data.notesMark && (message.content || "").startsWith(data.notesMark)) {
    // A meeting's notes: formatted, with links to what they started (sanitized by the server).
    // They end the meeting: the header says so at once, as it does after a reload.
    const ended = $("meeting-ended");
    if (ended) ended.hidden = false;
    const text = el("div", { class: "text md" });
    text.innerHTML = html;
    return el("aside", { class: "msg notice notes", id: `m-${message.id}`, dataset: { id: message.id, turn: message.turn, role: "notice" } }, text);
  }
  return el(
    "aside",
    { class: "msg notice", id: `m-${message.id}`, dataset: { id: message.id, turn: message.turn, role: "notice" } },
    el("span", { class: "notice-icon", "aria-hidden": "true", text: "ℹ" }),
    " ",
    el("span", { class: "text", text: message.content }),
  );
}

/** Put a new record where the chain says: after its `previous` (past a nudge shown under it), else at the end. */
function place(node, previousId) {
  let anchor = byId(previousId);
  if (anchor?.matches(".nudge")) anchor = null; // moved under its instruction: not a place in the chain
  if (anchor) {
    // The nudge sits right under its instruction, whatever its place in the chain.
    while (anchor.nextElementSibling?.matches(".nudge")) anchor = anchor.nextElementSibling;
    anchor.after(node);
  } else {
    // Live bubbles and the empty state stay last.
    const tail = history.querySelector(".msg.live, .msg.partial") || empty;
    tail.before(node);
  }
}

/** One `{message, html}` item, from a `session` snapshot or a `message` event. Never shown twice. */
function addMessage({ message, html }) {
  if (!message || !message.id || byId(message.id)) return;
  keepingScroll(() => {
    let node;
    if (message.role === "user") {
      node = userElement(message, html);
      const pending = takePending(message);
      if (pending) pending.el.remove();
      updateTaskCount(message.turn);
    } else if (message.role === "assistant") {
      node = assistantElement(message, html);
      const bubble = liveBubbleFor(message);
      if (bubble) {
        bubble.replaceWith(node);
        state.live.delete(bubble.dataset.key);
        renderWorking();
        node = null; // already placed
      }
    } else if (message.role === "tool") {
      node = toolResultElement(message);
    } else if (isNudge(message)) {
      const shown = history.querySelector(".nudge:not([data-id])");
      if (shown) {
        // The live `nudge` frame already showed it: this is its stored copy.
        shown.dataset.id = message.id;
        shown.id = `m-${message.id}`;
        return;
      }
      node = nudgeElement(message.content, message.id, message.turn);
      const instruction = [...history.querySelectorAll(`.msg.user[data-turn="${message.turn}"]`)].pop();
      if (instruction) {
        instruction.after(node);
        node = null;
      }
    } else {
      node = noticeElement(message, html);
    }
    if (node) place(node, message.previous);
    refreshTaskState(message.turn);
  });
  updateEmpty();
  updateRegenerate();
  if (message.role === "assistant" && !(message.tool_calls || []).length) fillContextBars();
}

// Sending instructions ------------------------------------------------------------------------------

/** The pending bubble a stored instruction confirms: by the client_id it was sent with (another
 * member's identical words are not mine), or by its words for a message stored without one. */
function takePending(message) {
  if (message.client_id) {
    const pending = state.pending.get(message.client_id);
    state.pending.delete(message.client_id);
    return pending || null;
  }
  const text = (message.content || "").trim();
  for (const [clientId, pending] of state.pending) {
    if (pending.text.trim() === text) {
      state.pending.delete(clientId);
      return pending;
    }
  }
  return null;
}

function submit() {
  const text = input.value;
  if (!text.trim() || !isOpen()) return;
  sendInstruction(text);
  input.value = "";
  sessionStorage.removeItem(DRAFT_KEY);
  autosize();
  updateSend();
}

/** Send is for something to send: never with an empty (or all-blank) composer, nor offline. */
function updateSend() {
  sendButton.disabled = !isOpen() || !input.value.trim();
}

/** Show `text` as pending and send it as a new instruction (a new client_id: a new task). */
function sendInstruction(text) {
  const clientId = newClientId();
  const node = userElement({ content: text.trim(), created_at: new Date().toISOString() });
  node.classList.add("pending");
  node.dataset.clientId = clientId;
  setBadge(node, "sending");
  keepingScroll(() => place(node, null));
  history.scrollTop = history.scrollHeight;
  state.pending.set(clientId, { text, el: node, sentAt: Date.now() });
  send({ type: "instruction", text, client_id: clientId });
  updateEmpty();
}

function resend(clientId, pending) {
  pending.sentAt = Date.now();
  pending.el.querySelector("[data-retry]")?.remove();
  setBadge(pending.el, "sending");
  send({ type: "instruction", text: pending.text, client_id: clientId });
}

// An instruction the server has not confirmed after a while: offer to send it again. The same
// client_id makes that harmless; the resync shows it if it had arrived after all.
setInterval(() => {
  if (!isOpen()) return;
  for (const [clientId, pending] of state.pending) {
    if (Date.now() - pending.sentAt < 15_000 || pending.el.querySelector("[data-retry]")) continue;
    setBadge(pending.el, "unconfirmed");
    const retry = el("button", { type: "button", class: "link", "data-retry": true, text: "Send again" });
    retry.addEventListener("click", () => {
      resend(clientId, pending);
      send({ type: "resync", after: state.lastSeq });
    });
    pending.el.querySelector("header").append(retry);
  }
}, 5_000);

function autosize() {
  input.style.height = "auto";
  input.style.height = `${Math.min(input.scrollHeight, window.innerHeight * 0.4)}px`;
}

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  submit();
});
const mentions = wireMentions(input, { members: (data.members || []).map((slug) => ({ slug, ...(data.coworkers[slug] || { name: slug }) })), onPick: () => updateSend() });

input.addEventListener("keydown", (event) => {
  if (mentions.handleKey(event)) return; // arrows, Enter, Tab and Escape belong to the open suggestions
  // isComposing: Enter that confirms an IME candidate (Chinese, Japanese) must not send.
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing && event.keyCode !== 229) {
    event.preventDefault();
    submit();
  }
});
input.addEventListener("input", () => {
  autosize();
  updateSend();
  sessionStorage.setItem(DRAFT_KEY, input.value);
});

// Task state, streaming and "who is working" ----------------------------------------------------------

function setBadge(node, status, error) {
  const badge = node.querySelector("[data-task-state]");
  if (!badge) return;
  badge.dataset.status = status || "";
  badge.textContent = STATE_LABELS[status] || "";
  node.querySelector(".task-error")?.remove();
  if (status === "failed" && error) node.querySelector(".bubble").append(el("p", { class: "task-error", text: error }, " ", retryButton()));
}

/** On a failed task (also in the server's first paint): send its instruction again, as a new task. */
function retryButton() {
  return el("button", { type: "button", class: "link", "data-retry-task": true, text: "Retry", disabled: !isOpen() });
}

history.addEventListener("click", (event) => {
  const button = event.target.closest("[data-retry-task]");
  if (!button || !isOpen()) return;
  const text = typedWords(button.closest(".msg.user"));
  if (!text.trim()) return;
  sendInstruction(text);
  button.replaceWith(el("span", { class: "muted", text: "Sent again below." })); // the failed task stays as it was
});

/** An instruction as its person typed it: kept on the element, since its text is rendered markdown. */
function typedWords(instruction) {
  return instruction?.dataset.content ?? instruction?.querySelector(".text")?.innerText ?? "";
}

function refreshTaskState(turn) {
  if (!turn) return;
  const task = [...state.tasks.values()].find((t) => t.turn === turn);
  const node = [...history.querySelectorAll(`.msg.user[data-turn="${turn}"]`)].pop();
  if (!task || !node) return;
  setBadge(node, task.status === "done" ? "" : task.status, task.error);
}

function liveKey(task, coworker) {
  return `${task}:${coworker || ""}`;
}

/** The streaming (or stopped) bubble a final assistant message replaces. */
function liveBubbleFor(message) {
  for (const [key, bubble] of state.live) {
    const task = state.tasks.get(Number(bubble.dataset.task));
    const sameCoworker = (bubble.dataset.coworker || "") === (message.coworker || "");
    if (sameCoworker && (!task || task.turn === message.turn)) return state.live.get(key);
  }
  return null;
}

function onDelta(frame) {
  const key = liveKey(frame.task, frame.coworker);
  let bubble = state.live.get(key);
  if (!bubble) {
    const text = el("div", { class: "text md" });
    bubble = el(
      "article",
      { class: "msg assistant live", "aria-busy": "true", dataset: { key, task: frame.task, coworker: frame.coworker || "" } },
      el("div", { class: "avatar sm", style: `--c: ${coworkerColour(frame.coworker)}`, "aria-hidden": "true", text: coworkerName(frame.coworker).charAt(0) }),
      el("div", { class: "bubble" }, el("header", {}, el("span", { class: "who", text: coworkerName(frame.coworker) }), " ", el("span", { class: "typing", "aria-hidden": "true" }, el("i"), el("i"), el("i"))), text),
    );
    bubble.raw = "";
    state.live.set(key, bubble);
    keepingScroll(() => empty.before(bubble));
    updateEmpty();
  }
  bubble.raw += frame.text || "";
  formatLive(bubble);
  const task = state.tasks.get(frame.task) || { id: frame.task, turn: null, status: "running", coworker: frame.coworker };
  if (!TERMINAL.has(task.status)) {
    task.status = "running";
    task.active = frame.coworker; // in shared channels several coworkers answer one task, in turn
    task.lastActivity = Date.now();
    state.tasks.set(frame.task, task);
    renderWorking();
  }
}

/** Whether a live bubble's text is part of a stored reply of its task and coworker shown already. */
function alreadyShown(bubble, turn) {
  const words = (text) => (text || "").replace(/[^\p{L}\p{N}]+/gu, " ").trim();
  const streamed = words(bubble.raw);
  if (streamed.length < 12) return false; // too little to tell a stream's end from a new short reply
  const coworker = bubble.dataset.coworker || "";
  return [...history.querySelectorAll(`.msg.assistant[data-id][data-turn="${turn}"]`)].some(
    (node) => (node.dataset.coworker || "") === coworker && words(node.querySelector(".text")?.textContent).includes(streamed),
  );
}

/** Format the streamed text once a frame, however many deltas arrived in it (text only, no HTML). */
function formatLive(bubble) {
  if (bubble.formatting) return;
  bubble.formatting = requestAnimationFrame(() => {
    bubble.formatting = 0;
    keepingScroll(() => bubble.querySelector(".text").replaceChildren(formatStreaming(bubble.raw)));
  });
}

function onTask(frame) {
  const task = { ...(state.tasks.get(frame.id) || {}), ...frame, lastActivity: Date.now() };
  state.tasks.set(frame.id, task);
  refreshTaskState(task.turn);
  if (TERMINAL.has(task.status)) {
    for (const [key, bubble] of state.live) {
      if (Number(bubble.dataset.task) !== task.id || bubble.classList.contains("partial")) continue;
      if (alreadyShown(bubble, task.turn)) {
        // The end of a stream whose stored message the page already showed (its deltas came in
        // after a reconnect's snapshot): not a second, cut-short reply.
        bubble.remove();
        state.live.delete(key);
        continue;
      }
      // The final message replaces a bubble before the task ends; what is left was cut short.
      bubble.classList.replace("live", "partial");
      bubble.removeAttribute("aria-busy");
      bubble.querySelector(".typing")?.remove();
      bubble.querySelector(".bubble").append(el("p", { class: "partial-note", text: task.status === "stopped" ? "Stopped before finishing." : "Interrupted before finishing." }));
      state.live.set(key, bubble);
    }
    // Its report (what the prompt was made of) is final now, even for a stopped or failed task.
    forgetReport(state.sessionId, task.turn);
    fillContextBars();
  }
  renderWorking();
  updateRegenerate();
}

// Regenerate ----------------------------------------------------------------------------------------

/** "Regenerate" on the last reply of the conversation, once nothing is being worked on. */
function updateRegenerate() {
  const users = history.querySelectorAll(".msg.user[data-turn]");
  const last = users[users.length - 1];
  const turn = last && !last.matches(".pending, .not-sent") && data.kind !== "meeting" ? Number(last.dataset.turn) : 0;
  const busy = [...state.tasks.values()].some((task) => !TERMINAL.has(task.status));
  const replies = turn && !busy ? history.querySelectorAll(`.msg.assistant:not(.steps)[data-turn="${turn}"] .msg-actions`) : [];
  const target = replies[replies.length - 1] || null;
  for (const button of history.querySelectorAll("[data-regenerate]")) if (button.parentElement !== target) button.remove();
  if (!target) return;
  let button = target.querySelector("[data-regenerate]");
  if (!button) {
    button = el("button", { type: "button", class: "link", "data-regenerate": String(turn), title: "Ask the same instruction again: a new answer below, this one stays", text: "Regenerate" });
    target.append(button);
  }
  if (button.dataset.sent !== "1") button.disabled = !isOpen();
}

history.addEventListener("click", (event) => {
  const button = event.target.closest("[data-regenerate]");
  if (!button || !isOpen()) return;
  if (send({ type: "task.regenerate", turn: Number(button.dataset.regenerate) })) {
    button.dataset.sent = "1";
    button.disabled = true;
    button.textContent = "Regenerating…";
  }
});

function renderWorking() {
  const open = [...state.tasks.values()].filter((t) => !TERMINAL.has(t.status)).sort((a, b) => (a.turn || 0) - (b.turn || 0));
  const rows = open.map((task) => {
    const who = coworkerName(task.active || task.coworker || "");
    const label =
      task.status === "queued"
        ? task.coworker ? `Queued: ${who} will pick it up next…` : "Queued…"
        : task.coworker || task.active ? `${who} is working…` : "The team is working…";
    const stop = el("button", { type: "button", class: "small secondary", "data-stop": String(task.id), text: task.stopping ? "Stopping…" : "Stop" });
    stop.disabled = Boolean(task.stopping) || !isOpen();
    stop.setAttribute("aria-label", `Stop task ${task.turn || ""}: ${label}`);
    return el("div", { class: "working-row" }, el("span", { class: "typing", "aria-hidden": "true" }, el("i"), el("i"), el("i")), el("span", { text: label }), stop);
  });
  working.replaceChildren(...rows);
  // The sidebar's dots are sidebar.js's: a coworker may be at work in another channel too.
}

working.addEventListener("click", (event) => {
  const button = event.target.closest("[data-stop]");
  if (!button) return;
  const id = Number(button.dataset.stop);
  if (send({ type: "task.stop", task: id })) {
    const task = state.tasks.get(id);
    if (task) task.stopping = true;
    renderWorking();
  }
});

/** Tasks the page knew were open may have finished before the socket connected: ask once. */
async function reconcileOpenTasks() {
  for (const task of [...state.tasks.values()]) {
    if (TERMINAL.has(task.status) || !task.turn) continue;
    try {
      const answer = await fetchReport(state.sessionId, task.turn);
      forgetReport(state.sessionId, task.turn);
      if (TERMINAL.has(answer.status) && !TERMINAL.has(state.tasks.get(task.id)?.status)) {
        onTask({ id: task.id, turn: task.turn, status: answer.status, coworker: answer.coworker, error: task.error || "" });
      }
    } catch {
      /* the next event will tell */
    }
  }
}

// Context bars --------------------------------------------------------------------------------------

const requested = new Set();

function fillContextBars() {
  const footers = [...history.querySelectorAll("footer.ctx[data-turn]:empty")];
  const turns = [...new Set(footers.map((f) => Number(f.dataset.turn)))].slice(-30);
  for (const turn of turns) {
    const task = [...state.tasks.values()].find((t) => t.turn === turn);
    if (task && !TERMINAL.has(task.status)) continue; // its report is read once the task is done
    const cached = data.reports?.[String(turn)];
    if (cached && state.sessionId === data.session) {
      attachBars(turn, cached, cached.coworker);
      continue;
    }
    const key = `${state.sessionId}:${turn}`;
    if (requested.has(key)) continue;
    requested.add(key);
    fetchReport(state.sessionId, turn)
      .then((answer) => {
        if (answer.report) attachBars(turn, barFromReport(answer.report), answer.coworker);
      })
      .catch(() => requested.delete(key));
  }
}

/** The report is of the prompt built for the task's (first) coworker: its bar goes on their replies only. */
function attachBars(turn, bar, coworker) {
  for (const footer of history.querySelectorAll(`footer.ctx[data-turn="${turn}"]:empty`)) {
    if (coworker && footer.dataset.coworker !== coworker) continue;
    footer.append(renderBar(bar, turn));
  }
}

wireReports(history, () => state.sessionId);

// The nudge -----------------------------------------------------------------------------------------

const dismissedKey = (session) => `vo:nudge-kept:${session}`;

function nudgeElement(text, id, turn) {
  const actions = el(
    "div",
    { class: "nudge-actions" },
    el("button", { type: "button", "data-action": "session-new", text: "Start a new conversation" }),
    el("button", { type: "button", class: "secondary", "data-action": "nudge-dismiss", text: "Keep going" }),
  );
  const node = el("aside", { class: "msg nudge", role: "note", "data-nudge": true, dataset: { id: id || undefined, turn: turn || undefined } }, el("p", { class: "nudge-text", text }), actions);
  if (id) node.id = `m-${id}`;
  setupNudge(node);
  return node;
}

/** Show the buttons on the active session's nudge, unless the person chose to keep going. */
function setupNudge(node) {
  const actions = node.querySelector(".nudge-actions");
  if (!actions) return;
  const kept = state.sessionId && localStorage.getItem(dismissedKey(state.sessionId));
  actions.hidden = Boolean(kept);
  if (kept && !node.querySelector(".nudge-kept")) node.append(el("p", { class: "nudge-kept", text: "You chose to keep going." }));
  for (const button of actions.querySelectorAll("button")) button.disabled = !isOpen();
}

function onNudge(frame) {
  if (frame.session && state.sessionId && frame.session !== state.sessionId) return;
  if (history.querySelector(".nudge")) return; // once per session
  const node = nudgeElement(frame.text, null, null);
  keepingScroll(() => {
    const users = history.querySelectorAll(".msg.user:not(.pending)");
    const instruction = users[users.length - 1];
    if (frame.trigger === "instruction" && instruction) instruction.after(node);
    else place(node, null);
  });
  updateEmpty();
}

history.addEventListener("click", (event) => {
  const button = event.target.closest("[data-action]");
  if (!button) return;
  const node = button.closest(".nudge");
  if (button.dataset.action === "session-new") {
    send({ type: "session.new" });
  } else if (button.dataset.action === "nudge-dismiss") {
    if (!send({ type: "nudge.dismiss" })) return;
    if (state.sessionId) localStorage.setItem(dismissedKey(state.sessionId), "1");
    setupNudge(node);
    input.focus();
  }
});

newSessionButton.addEventListener("click", () => {
  const ok = window.confirm("Start a new conversation?\n\nThis one ends and moves to Past conversations. Long-term memory carries over, and a short note of this conversation's summary comes along.");
  if (ok) send({ type: "session.new" });
});

// Sessions ------------------------------------------------------------------------------------------

function shortLine(text, limit) {
  const line = text.split(/\s+/).join(" ").trim();
  return line.length <= limit ? line : line.slice(0, limit - 1).trimEnd() + "…";
}

function rememberPastSession(sessionId, title, preview) {
  let menu = $("past-sessions");
  if (!menu) {
    const summary = el("summary", {}, el("span", { class: "label-long", text: "Past conversations" }), el("span", { class: "label-short", text: "Past" }), " ", el("span", { class: "count", text: "0" }));
    menu = el("details", { class: "menu past", id: "past-sessions" }, summary, el("ul", { class: "menu-list past-list" }));
    newSessionButton.before(menu);
  }
  const count = menu.querySelector(".count");
  count.textContent = String(Number(count.textContent) + 1);
  const href = `${location.pathname.replace(/\/$/, "")}/sessions/${encodeURIComponent(sessionId)}/`;
  const item = el(
    "a",
    { href },
    el("span", { class: "past-title", text: shortLine(title, 70) || "Untitled conversation" }),
    preview ? el("span", { class: "past-preview", text: shortLine(preview, 110) }) : null,
    el("span", { class: "past-meta", text: "Ended just now" }),
  );
  menu.querySelector(".menu-list").prepend(el("li", {}, item));
}

// What a new conversation carried over from the one before: its note, at the top (sanitized by the server).
function showCarriedNote(html) {
  const note = $("carried-note");
  if (!note) return;
  if (typeof html === "string" && html) $("carried-note-text").innerHTML = html;
  note.hidden = !(typeof html === "string" && html);
}

function clearConversation() {
  for (const node of history.querySelectorAll(".msg, .history-note")) node.remove();
  state.live.clear();
  state.tasks.clear();
  state.pending.clear();
  const count = $("task-count");
  if (count) {
    count.dataset.count = "0";
    count.textContent = "0 tasks in this conversation";
  }
  renderWorking();
  updateEmpty();
}

function onSession(frame) {
  const session = frame.session || {};
  const switching = session.id !== state.sessionId;
  // A replayed announcement of a session we have already moved past.
  if (switching && state.haveSession && typeof frame.seq === "number" && frame.seq <= state.lastSeq) return;
  const first = !state.haveSession;
  state.haveSession = true;
  if (switching) showCarriedNote(session.carried_note_html);
  if (switching) {
    if (state.sessionId) rememberPastSession(state.sessionId, typedWords(history.querySelector(".msg.user")), history.querySelector(".msg.assistant:not(.steps) .text")?.innerText || "");
    clearConversation();
    state.sessionId = session.id;
  }
  // The snapshot covers everything up to its seq; on a reconnect to the same session, resync fills the gap.
  if (typeof frame.seq === "number" && (switching || !state.knowSeq)) state.lastSeq = Math.max(state.lastSeq, frame.seq);
  state.knowSeq = true;
  if (Array.isArray(session.tasks)) for (const task of session.tasks) if (task && task.id) onTask(task);
  for (const item of frame.messages || []) addMessage(item);
  for (const nudge of history.querySelectorAll(".nudge")) setupNudge(nudge);
  updateEmpty();
  fillContextBars();
  if (first && !switching && typeof data.seq !== "number") reconcileOpenTasks();
  if (switching) {
    history.scrollTop = history.scrollHeight;
    input.focus();
  }
}

// Errors --------------------------------------------------------------------------------------------

// The instruction was refused (pipeline.InstructionRejected codes): give the text back.
const INSTRUCTION_ERRORS = new Set(["empty", "too_long", "not_member", "invalid", "bad_frame"]);

function showError(frame) {
  const text = banner.querySelector(".banner-text");
  // The code is for a bug report, not for people: shown only when there are no words to show.
  const code = !frame.detail && frame.code ? el("span", { class: "code", text: ` (${frame.code})` }) : null;
  text.replaceChildren(el("span", { text: frame.detail || "Something went wrong." }), ...(code ? [code] : []));
  banner.hidden = false;
  for (const button of history.querySelectorAll("[data-regenerate][data-sent]")) {
    // Refused (the rate limit, say): the button is there to try again.
    delete button.dataset.sent;
    button.textContent = "Regenerate";
    button.disabled = !isOpen();
  }
  // An error that names a waiting instruction refused it, whatever the reason (its rate limit,
  // too many waiting); one that names none refused the last sent if it is of a refusal's kind.
  const refused = frame.client_id ? state.pending.has(frame.client_id) : INSTRUCTION_ERRORS.has(frame.code);
  if (refused) {
    const clientId = frame.client_id || [...state.pending.keys()].pop();
    const pending = state.pending.get(clientId);
    if (pending) {
      state.pending.delete(clientId);
      pending.el.classList.replace("pending", "not-sent");
      setBadge(pending.el, "not-sent");
      if (!input.value.trim()) {
        input.value = pending.text;
        autosize();
        updateSend(); // the text is back: it can be sent again as it is
      }
    }
  }
}

banner.querySelector("[data-dismiss-banner]").addEventListener("click", () => {
  banner.hidden = true;
  input.focus();
});

// The socket ----------------------------------------------------------------------------------------

function seen(frame) {
  if (typeof frame.seq !== "number") return false;
  if (frame.seq <= state.lastSeq) return true;
  state.lastSeq = frame.seq;
  return false;
}

function handle(frame) {
  switch (frame.type) {
    case "session":
      return onSession(frame);
    case "message":
      if (!seen(frame)) addMessage(frame);
      return;
    case "delta":
      return onDelta(frame);
    case "task":
      if (!seen(frame)) onTask(frame);
      return;
    case "nudge":
      if (!seen(frame)) onNudge(frame);
      return;
    case "resync":
      // More was missed than one replay sends: the page, rendered afresh, has all of it.
      if (frame.truncated) window.location.reload();
      return;
    case "error":
      if (frame.refused === "resync" && frame.retry_after) {
        // Asked too fast (many tabs reconnecting at once): asked again once allowed, no banner.
        setTimeout(() => isOpen() && send({ type: "resync", after: state.lastSeq }), frame.retry_after * 1000);
        return;
      }
      return showError(frame);
  }
}

function setConnected(status, detail) {
  conn.dataset.state = status;
  const text = conn.querySelector(".conn-text");
  conn.querySelector("button")?.remove();
  const open = status === "open";
  // Disabled until the first connection only: after that a drop never takes the keyboard away
  // (what is typed meanwhile is kept; Enter sends once the connection is back).
  if (open) input.disabled = false;
  updateSend();
  updateRegenerate();
  newSessionButton.disabled = !open;
  for (const button of history.querySelectorAll(".nudge-actions button")) button.disabled = !open;
  for (const button of working.querySelectorAll("[data-stop]")) button.disabled = !open;
  for (const button of history.querySelectorAll("[data-retry-task]")) button.disabled = !open;
  for (const { el: node } of state.pending.values()) setBadge(node, open ? "sending" : "waiting");
  if (open) {
    text.textContent = "Live";
    hint.replaceChildren(...HINT.map((node) => node.cloneNode(true)));
    hint.classList.remove("offline");
  } else {
    text.textContent = detail || (status === "connecting" ? "Connecting…" : "Offline");
    hint.textContent =
      status === "connecting"
        ? "Connecting… the composer opens as soon as the connection is up."
        : "Disconnected: reconnecting by itself. Keep typing: Enter sends once the connection is back, and anything not yet confirmed is sent again then.";
    hint.classList.add("offline");
    if (status === "closed") {
      const retry = el("button", { type: "button", class: "link", text: "Retry" });
      retry.addEventListener("click", () => connect());
      conn.append(" ", retry);
    }
  }
}

function connect() {
  clearTimeout(state.retryTimer);
  clearInterval(state.countdown);
  if (state.socket && state.socket.readyState <= WebSocket.OPEN) return;
  setConnected("connecting");
  const scheme = location.protocol === "https:" ? "wss://" : "ws://";
  const socket = new WebSocket(scheme + location.host + data.socket);
  state.socket = socket;
  socket.addEventListener("open", () => {
    state.retries = 0;
    setConnected("open");
    if (document.activeElement === document.body || document.activeElement === input) input.focus();
    // Everything after the last event we saw (the server ignores a resync with nothing to replay).
    if (state.knowSeq) send({ type: "resync", after: state.lastSeq });
    // Sent but never confirmed: the same client_id makes a resend harmless.
    for (const [clientId, pending] of state.pending) resend(clientId, pending);
    renderWorking();
  });
  socket.addEventListener("message", (event) => {
    let frame;
    try {
      frame = JSON.parse(event.data);
    } catch {
      return;
    }
    handle(frame);
  });
  socket.addEventListener("close", (event) => {
    if (state.socket !== socket) return;
    state.socket = null;
    if (event.code === 4401 || event.code === 4403) {
      setConnected("closed", "Signed out");
      showError({ code: "signed_out", detail: "Your sign-in has ended. Reload the page to sign in again." });
      return;
    }
    scheduleReconnect();
  });
}

function scheduleReconnect() {
  if (navigator.onLine === false) {
    // No network: nothing to try until the browser says it is back ("online" reconnects at once).
    setConnected("closed", "Offline: no network");
    return;
  }
  // 1 s, 2 s, 4 s … up to 30 s, with jitter so many tabs do not reconnect in step.
  const delay = Math.min(30, 2 ** state.retries) * (0.8 + Math.random() * 0.4);
  state.retries += 1;
  let left = Math.ceil(delay);
  setConnected("closed", `Reconnecting in ${left} s`);
  state.countdown = setInterval(() => {
    left -= 1;
    if (left > 0) conn.querySelector(".conn-text").textContent = `Reconnecting in ${left} s`;
  }, 1000);
  state.retryTimer = setTimeout(connect, delay * 1000);
}

document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible" && !state.socket) connect();
});
window.addEventListener("online", () => {
  if (!state.socket) connect();
});
// The browser knows the network is gone before the socket does (it can look open for a minute):
// say so at once; what is typed is kept, and what was not confirmed is sent again once back.
window.addEventListener("offline", () => {
  state.socket?.close();
});

// Start ---------------------------------------------------------------------------------------------

const draft = sessionStorage.getItem(DRAFT_KEY);
if (draft) input.value = draft;
autosize();
updateSend();
updateRegenerate();
for (const node of history.querySelectorAll(".nudge")) setupNudge(node);
for (const task of state.tasks.values()) refreshTaskState(task.turn);
renderWorking();
fillContextBars();
if (!showTurnFromHash(history)) history.scrollTop = history.scrollHeight;
connect();
input.focus();
