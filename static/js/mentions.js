// @mention suggestions in the composer of a shared channel: type @ and the channel's coworkers are
// listed; arrow keys move, Enter or Tab (or a click) picks, Escape closes. Picking writes `@slug `,
// the handle coworkers/routing.py reads. Names are set as text, never as HTML.

const QUERY = /(?:^|[^\w@])@([\w.-]*)$/; // an @handle being typed right before the caret

export function wireMentions(input, { members, onPick }) {
  const none = { handleKey: () => false };
  if (!members.length) return none;

  const list = document.createElement("ul");
  list.className = "mentions";
  list.id = "mention-list";
  list.setAttribute("role", "listbox");
  list.setAttribute("aria-label", "Coworkers to mention");
  list.hidden = true;
  input.closest(".composer-box").append(list);
  input.setAttribute("aria-controls", list.id);
  input.setAttribute("aria-autocomplete", "list");

  let shown = []; // the members listed now
  let active = 0;
  let start = -1; // where the @ being completed is

  function close() {
    list.hidden = true;
    shown = [];
    start = -1;
    input.removeAttribute("aria-activedescendant");
    input.setAttribute("aria-expanded", "false");
  }

  function highlight(index) {
    active = (index + shown.length) % shown.length;
    [...list.children].forEach((item, i) => item.setAttribute("aria-selected", String(i === active)));
    input.setAttribute("aria-activedescendant", list.children[active].id);
    list.children[active].scrollIntoView({ block: "nearest" });
  }

  function update() {
    const before = input.value.slice(0, input.selectionStart);
    const match = input.selectionStart === input.selectionEnd ? QUERY.exec(before) : null;
    if (!match) return close();
    const typed = match[1].toLowerCase();
    shown = members.filter((m) => m.slug.toLowerCase().startsWith(typed) || (m.name || "").toLowerCase().split(/\s+/).some((word) => word.startsWith(typed)));
    if (!shown.length) return close();
    start = before.length - match[1].length - 1;
    list.replaceChildren(
      ...shown.map((member, i) => {
        const item = document.createElement("li");
        item.id = `mention-${i}`;
        item.setAttribute("role", "option");
        item.dataset.slug = member.slug;
        const avatar = document.createElement("span");
        avatar.className = "avatar xs";
        avatar.style.setProperty("--c", member.colour || "#6366f1");
        avatar.setAttribute("aria-hidden", "true");
        avatar.textContent = (member.name || member.slug).charAt(0);
        const name = document.createElement("strong");
        name.textContent = member.name || member.slug;
        const role = document.createElement("span");
        role.className = "muted";
        role.textContent = member.role ? `@${member.slug} · ${member.role}` : `@${member.slug}`;
        item.append(avatar, name, role);
        return item;
      }),
    );
    list.hidden = false;
    input.setAttribute("aria-expanded", "true");
    highlight(Math.min(active, shown.length - 1));
  }

  function pick(member) {
    const after = input.value.slice(input.selectionStart).replace(/^[\w.-]*/, "");
    const head = `${input.value.slice(0, start)}@${member.slug} `;
    input.value = head + after.replace(/^ /, "");
    input.setSelectionRange(head.length, head.length);
    close();
    input.focus();
    input.dispatchEvent(new Event("input", { bubbles: true })); // the draft, the height, Send
    onPick?.(member);
  }

  input.addEventListener("input", update);
  input.addEventListener("click", update);
  input.addEventListener("blur", () => setTimeout(close, 150)); // after a click on an option
  list.addEventListener("mousedown", (event) => event.preventDefault()); // keep the focus in the composer
  list.addEventListener("click", (event) => {
    const item = event.target.closest("[data-slug]");
    if (item) pick(members.find((m) => m.slug === item.dataset.slug));
  });

  return {
    /** True when the key was the suggestions' (the composer must not act on it too). */
    handleKey(event) {
      if (list.hidden || !shown.length || event.isComposing) return false;
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        highlight(active + (event.key === "ArrowDown" ? 1 : -1));
      } else if ((event.key === "Enter" && !event.shiftKey) || event.key === "Tab") {
        pick(shown[active]);
      } else if (event.key === "Escape") {
        close();
      } else {
        return false;
      }
      event.preventDefault();
      event.stopPropagation();
      return true;
    },
  };
}
