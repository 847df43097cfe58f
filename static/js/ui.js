// Small page behaviours shared by every page: the mobile menu, confirmations, local times.
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

  // Close an open <details class="menu"> on Escape or a click elsewhere.
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    for (const menu of document.querySelectorAll("details.menu[open]")) {
      menu.open = false;
      menu.querySelector("summary")?.focus();
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
      const withDay = el.closest(".memory-meta")
        ? when.toLocaleDateString([], { month: "short", day: "numeric", year: "numeric" })
        : sameDay ? time : `${when.toLocaleDateString([], { month: "short", day: "numeric" })}, ${time}`;
      el.textContent = withDay;
      el.title = when.toLocaleString();
      el.dataset.localized = "1";
    }
  };
  document.addEventListener("DOMContentLoaded", () => window.formatLocalTimes());
})();
