// Small page behaviours shared by every page: the mobile menu, confirmations, local times, copy buttons.
// Plain script (no module), loaded with defer. Never inserts text as HTML.
(function () {
  "use strict";

  document.addEventListener("click", (event) => {
    const toggle = event.target.closest("[data-toggle-nav]");
    if (!toggle) return;
    const sidebar = toggle.closest(".sidebar");
    const open = !sidebar.classList.contains("open");
    sidebar.classList.toggle("open", open);
    toggle.setAttribute("aria-expanded", String(open));
  });

  // A "Cancel" inside a <details> editor closes it and gives the focus back to its opener.
  document.addEventListener("click", (event) => {
    const cancel = event.target.closest("[data-close-details]");
    if (!cancel) return;
    const details = cancel.closest("details");
    details.open = false;
    details.querySelector("summary")?.focus();
  });

  // <form data-confirm="…">: ask before posting (deleting a memory, for instance).
  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      event.preventDefault();
    }
  });

  // Close an open <details class="menu">, an open memory editor and the phone's open menu on
  // Escape (the focus goes back to what opened it), or a menu on a click elsewhere.
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    for (const menu of document.querySelectorAll("details.menu[open], details:has([data-close-details])[open]")) {
      menu.open = false;
      menu.querySelector("summary")?.focus();
    }
    const nav = document.querySelector(".sidebar.open");
    if (nav) {
      nav.classList.remove("open");
      const toggle = nav.querySelector("[data-toggle-nav]");
      toggle?.setAttribute("aria-expanded", "false");
      toggle?.focus();
    }
  });
  document.addEventListener("click", (event) => {
    for (const menu of document.querySelectorAll("details.menu[open]")) {
      if (!menu.contains(event.target)) menu.open = false;
    }
  });

  // Times come from the server in its time zone; show them in the reader's.
  window.formatLocalTimes = function (root) {
    const now = new Date();
    for (const el of (root || document).querySelectorAll("time[datetime]")) {
      if (el.dataset.localized) continue;
      const when = new Date(el.getAttribute("datetime"));
      if (isNaN(when)) continue;
      const sameDay = when.toDateString() === now.toDateString();
      const time = when.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
      const day = when.toLocaleDateString([], { month: "short", day: "numeric" });
      // data-with-day: the date even today (a past conversation's header says when it was).
      const withDay = el.closest(".memory-meta")
        ? when.toLocaleDateString([], { month: "short", day: "numeric", year: "numeric" })
        : sameDay && !el.hasAttribute("data-with-day") ? time : `${day}, ${time}`;
      el.textContent = withDay;
      el.title = when.toLocaleString();
      el.dataset.localized = "1";
    }
  };
  document.addEventListener("DOMContentLoaded", () => window.formatLocalTimes());

  // Copy: a button on each reply (data-copy="reply") and one on each code block of a rendered reply.
  // Only elements and text are created here; the replies' HTML is the server's, sanitized.
  window.decorateCode = function (root) {
    for (const pre of (root || document).querySelectorAll(".md pre")) {
      if (pre.parentElement.classList.contains("code-block")) continue;
      const block = document.createElement("div");
      block.className = "code-block";
      const button = document.createElement("button");
      button.type = "button";
      button.className = "copy-code";
      button.dataset.copy = "code";
      button.setAttribute("aria-label", "Copy code");
      button.textContent = "Copy";
      pre.before(block);
      block.append(button, pre);
    }
  };
  document.addEventListener("DOMContentLoaded", () => window.decorateCode());

  /** The text a person sees, without the copy buttons' own labels. */
  function visibleText(node) {
    const buttons = [...node.querySelectorAll("[data-copy]")];
    // Not `hidden`: the buttons' own display rule would win over it.
    for (const button of buttons) button.style.display = "none";
    const text = node.innerText.trim();
    for (const button of buttons) button.style.display = "";
    return text;
  }

  async function copy(text, html) {
    try {
      if (html && window.ClipboardItem && navigator.clipboard?.write) {
        // Both kinds: a document keeps the formatting, a plain text box gets the words.
        const item = { "text/plain": new Blob([text], { type: "text/plain" }), "text/html": new Blob([html], { type: "text/html" }) };
        await navigator.clipboard.write([new ClipboardItem(item)]);
      } else {
        await navigator.clipboard.writeText(text);
      }
      return true;
    } catch {
      // No clipboard API (a plain-http address other than localhost): the old way.
      const area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.cssText = "position:fixed;top:-1000px;opacity:0";
      document.body.append(area);
      area.select();
      const done = document.execCommand("copy");
      area.remove();
      return done;
    }
  }

  document.addEventListener("click", async (event) => {
    const button = event.target.closest("[data-copy]");
    if (!button) return;
    let text = "";
    let html = "";
    if (button.dataset.copy === "code") {
      text = button.parentElement.querySelector("pre")?.textContent.replace(/\n$/, "") || "";
    } else {
      const body = button.closest(".bubble")?.querySelector(".text");
      if (!body) return;
      text = visibleText(body);
      const clone = body.cloneNode(true);
      for (const extra of clone.querySelectorAll("[data-copy]")) extra.remove();
      html = clone.innerHTML;
    }
    const ok = await copy(text, html);
    const label = button.dataset.label || button.textContent;
    button.dataset.label = label;
    button.textContent = ok ? "Copied" : "Copy failed";
    button.classList.toggle("copied", ok);
    clearTimeout(button.resetTimer);
    button.resetTimer = setTimeout(() => {
      button.textContent = label;
      button.classList.remove("copied");
    }, 1500);
  });
})();
