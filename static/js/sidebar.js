// The live sidebar: one websocket per page (/ws/offices/<id>/) keeps the coworkers' dots and the
// channels' unread badges current while the person stays on a page. Plain script (no module),
// loaded with defer. Writes text only, never HTML.
//
// Frames: `sidebar` (on every connect: who is working, and each channel's unread count with the
// seq it covers), `activity` {channel, seq} (one more reply) and `presence` {coworker, status}.
(function () {
  "use strict";

  const nav = document.getElementById("sidebar");
  if (!nav || !nav.dataset.officeSocket || !("WebSocket" in window)) return;
  // The channel on screen: its replies are being read, so it never shows a badge.
  const current = Number(nav.dataset.currentChannel || 0);
  // Channel id -> the seq the last `sidebar` frame's count covers, and the seqs counted live since
  // (frames from different workers can arrive out of order, and a reconnect can repeat one).
  const covered = new Map();
  const counted = new Map();
  let socket = null;
  let retries = 0;
  let retryTimer = null;

  const channelLink = (id) => nav.querySelector(`a[data-channel="${id}"]`);
  const baseTitle = document.title.replace(/^\(\d+\) /, "");

  /** The tab says how many replies wait elsewhere: "(3) Mina · Acme". */
  function updateTitle() {
    const total = [...nav.querySelectorAll("a[data-channel] .unread")].reduce((sum, badge) => sum + (Number(badge.textContent) || 0), 0);
    document.title = total > 0 ? `(${total}) ${baseTitle}` : baseTitle;
  }

  /** While the socket is down nobody's state is known: no dot may claim "idle" or "working". */
  function setPresenceKnown(known) {
    document.documentElement.classList.toggle("presence-unknown", !known);
    for (const said of document.querySelectorAll("#sidebar .status-text")) {
      if (!known) said.textContent = "(status unknown while disconnected)";
    }
  }

  function unreadOf(id) {
    const badge = channelLink(id)?.querySelector(".unread");
    return badge ? Number(badge.textContent) || 0 : 0;
  }

  function setUnread(id, count) {
    const link = channelLink(id);
    if (!link || id === current) return;
    let badge = link.querySelector(".unread");
    if (count <= 0) {
      badge?.remove();
      return;
    }
    if (!badge) {
      badge = document.createElement("span");
      badge.className = "unread";
      link.append(badge);
    }
    badge.textContent = String(count);
    badge.setAttribute("aria-label", `${count} unread`);
  }

  function setUnreadAndTitle(id, count) {
    setUnread(id, count);
    updateTitle();
  }

  function setWorking(slug, busy) {
    const name = CSS.escape(slug);
    for (const node of document.querySelectorAll(`#sidebar a[data-coworker="${name}"], .tile[data-presence="${name}"]`)) {
      const dot = node.querySelector(".status");
      dot?.classList.toggle("working", busy);
      dot?.classList.toggle("idle", !busy);
      const role = node.querySelector(".role[data-role]");
      if (role) role.textContent = busy ? "Working…" : role.dataset.role;
      const said = node.querySelector(".status-text");
      if (said) said.textContent = busy ? "(working)" : "(idle)";
      const tile = node.querySelector(".tile-status");
      if (tile) {
        tile.classList.toggle("working", busy);
        tile.textContent = busy ? "Working…" : "Available";
      }
    }
  }

  function handle(frame) {
    if (frame.type === "sidebar") {
      // The whole state again (also after a reconnect): nothing missed while away can drift.
      covered.clear();
      counted.clear();
      for (const channel of frame.channels || []) {
        covered.set(channel.id, channel.seq);
        setUnread(channel.id, channel.unread);
      }
      updateTitle();
      setPresenceKnown(true);
      const working = new Set(frame.working || []);
      for (const node of document.querySelectorAll("#sidebar a[data-coworker], .tile[data-presence]")) {
        const slug = node.dataset.coworker || node.dataset.presence;
        setWorking(slug, working.has(slug));
      }
    } else if (frame.type === "activity") {
      if (frame.seq <= (covered.get(frame.channel) || 0)) return;
      const seen = counted.get(frame.channel) || new Set();
      if (seen.has(frame.seq)) return;
      counted.set(frame.channel, seen.add(frame.seq));
      setUnreadAndTitle(frame.channel, unreadOf(frame.channel) + 1);
    } else if (frame.type === "presence") {
      setWorking(frame.coworker, frame.status === "working");
    }
  }

  function connect() {
    clearTimeout(retryTimer);
    if (socket && socket.readyState <= WebSocket.OPEN) return;
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const ws = new WebSocket(scheme + location.host + nav.dataset.officeSocket);
    socket = ws;
    ws.addEventListener("open", () => {
      retries = 0;
      nav.dataset.live = "1";
    });
    ws.addEventListener("message", (event) => {
      try {
        handle(JSON.parse(event.data));
      } catch {
        // A frame this page does not understand changes nothing.
      }
    });
    ws.addEventListener("close", (event) => {
      if (socket !== ws) return;
      socket = null;
      delete nav.dataset.live;
      setPresenceKnown(false);
      if (event.code === 4401 || event.code === 4403) return; // signed out: the page says so on its next load
      if (navigator.onLine === false) return; // no network: "online" reconnects
      // 1 s, 2 s, 4 s … up to 30 s, with jitter so many tabs do not reconnect in step.
      const delay = Math.min(30, 2 ** retries) * (0.8 + Math.random() * 0.4);
      retries += 1;
      retryTimer = setTimeout(connect, delay * 1000);
    });
  }

  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible" && !socket) connect();
  });
  window.addEventListener("online", () => {
    if (!socket) connect();
  });
  window.addEventListener("offline", () => socket?.close());
  updateTitle();
  connect();
})();
