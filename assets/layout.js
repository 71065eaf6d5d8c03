// The page's movable parts (SPEC §16), in the browser:
// - below 768 px the sidebar is a sheet: `sidebar-toggle` opens it (<html data-sidebar="open">),
//   choosing a chat, the backdrop or Escape closes it;
// - the Schedules drawer (rendered by the server while open): on opening, the keyboard focus
//   moves into it; while it overlays the chat (narrower than 1100 px) Tab stays inside it and the
//   page behind is inert; Escape closes it (unless a dialog above it took the key) and the focus
//   goes back to the Schedules button; a run-history click (which scrolls the transcript to that
//   fire) closes an overlaying drawer so the fire is seen.
(() => {
  const DRAWER = '[data-testid="schedules-drawer"]';
  const SIDEBAR = ".cc-sidebar";
  const TOGGLE = '[data-testid="sidebar-toggle"]';
  const OVERLAY = window.matchMedia("(max-width: 1099.98px)"); // the drawer covers the chat
  const PHONE = window.matchMedia("(max-width: 767.98px)"); // the sidebar is a sheet
  const FOCUSABLE = 'a[href], button:not([disabled]), input:not([disabled]), textarea:not([disabled]), ' +
    'select:not([disabled]), [tabindex]:not([tabindex="-1"])';

  let drawer = null; // the open drawer element, or null

  const root = document.documentElement;
  const sidebarOpen = () => root.dataset.sidebar === "open";

  const visible = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== "hidden";
  const focusables = (box) => [...box.querySelectorAll(FOCUSABLE)].filter(visible);

  // Another dialog (the schedule form, a confirmation) above the drawer handles its own keys.
  const dialogAbove = () =>
    [...document.querySelectorAll('[role="dialog"], [role="alertdialog"]')].some(
      (el) => !el.matches(DRAWER) && el.getAttribute("data-state") !== "closed" && visible(el));

  const setInert = (on) => {
    for (const el of document.querySelectorAll(".cc-chat-column, .cc-sidebar")) {
      if (on) el.setAttribute("inert", "");
      else el.removeAttribute("inert");
    }
  };

  // The drawer overlays (narrow) or sits beside the chat (wide): inert and aria-modal follow.
  const drawerMode = () => {
    if (!drawer) return;
    drawer.setAttribute("aria-modal", OVERLAY.matches ? "true" : "false");
    setInert(OVERLAY.matches);
  };

  const drawerOpened = (el) => {
    drawer = el;
    closeSidebar(false);
    drawerMode();
    el.focus({ preventScroll: true });
  };

  const drawerClosed = () => {
    drawer = null;
    setInert(false);
    const active = document.activeElement;
    if (!active || active === document.body) {
      const button = document.querySelector('[data-testid="schedules-button"]');
      if (button) button.focus({ preventScroll: true });
    }
  };

  // The page's path without a trailing slash: the router may add or drop one after a navigation.
  const here = () => location.pathname.replace(/\/+$/, "") || "/";
  let path = here();

  const watch = () => {
    if (here() !== path) { // another page (a chat chosen, a new chat, logged out)
      path = here();
      closeSidebar(false);
    }
    const el = document.querySelector(DRAWER);
    if (el && el !== drawer) drawerOpened(el);
    else if (!el && drawer) drawerClosed();
  };

  const setToggle = (open) => {
    for (const toggle of document.querySelectorAll(TOGGLE)) {
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
    }
  };

  const openSidebar = () => {
    // Opened on this page: a navigation the observer has not seen yet (no DOM change since) must
    // not close it on the next change.
    path = here();
    root.dataset.sidebar = "open";
    setToggle(true);
    const sidebar = document.querySelector(SIDEBAR);
    const first = sidebar && focusables(sidebar)[0];
    if (first) first.focus({ preventScroll: true });
  };

  const closeSidebar = (refocus) => {
    if (!sidebarOpen()) return;
    delete root.dataset.sidebar;
    setToggle(false);
    const toggle = refocus && [...document.querySelectorAll(TOGGLE)].find(visible);
    if (toggle) toggle.focus({ preventScroll: true });
  };

  // Tab and Shift+Tab go round the controls of `box` instead of leaving it.
  const trapTab = (event, box) => {
    const items = focusables(box);
    if (!items.length) {
      event.preventDefault();
      return;
    }
    const first = items[0];
    const last = items[items.length - 1];
    const active = document.activeElement;
    const inside = box.contains(active);
    if (event.shiftKey && (!inside || active === first || active === box)) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && (!inside || active === last)) {
      event.preventDefault();
      first.focus();
    }
  };

  document.addEventListener("keydown", (event) => {
    if (event.key === "Tab") {
      if (sidebarOpen() && PHONE.matches) trapTab(event, document.querySelector(SIDEBAR));
      else if (drawer && OVERLAY.matches && !dialogAbove()) trapTab(event, drawer);
    } else if (event.key === "Escape" && !event.defaultPrevented) {
      if (sidebarOpen()) {
        closeSidebar(true);
      } else if (drawer && !dialogAbove()) {
        const close = drawer.querySelector('[data-testid="schedules-close"]');
        if (close) close.click();
      }
    }
  });

  document.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target : null;
    if (!target) return;
    if (target.closest(TOGGLE)) {
      if (sidebarOpen()) closeSidebar(true);
      else openSidebar();
    } else if (sidebarOpen() && (target.closest(".cc-sidebar-backdrop") ||
        target.closest(`${SIDEBAR} a[href], [data-testid="new-chat"], [data-testid="loose-chat-new"]`))) {
      closeSidebar(false);
    } else if (drawer && OVERLAY.matches && target.closest('[data-testid="schedule-run"]')) {
      // "Show this fire in the transcript": an overlaying drawer steps aside so it can be seen.
      const close = drawer.querySelector('[data-testid="schedules-close"]');
      if (close) close.click();
    }
  });

  OVERLAY.addEventListener("change", drawerMode);
  PHONE.addEventListener("change", () => closeSidebar(false));
  new MutationObserver(watch).observe(document.documentElement, { childList: true, subtree: true });
})();
