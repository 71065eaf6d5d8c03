// Keeps the chat transcript pinned to its newest entry (SPEC §16), entirely in the browser.
//
// "Pinned" changes only on a scroll the user made: content that grows (a streamed chunk, a fire,
// a page of history) never unpins, and while pinned every change scrolls to the bottom. A user who
// scrolls up is left where they are and sees the jump-to-latest button (shown by the stylesheet
// from the wrapper's data-pinned attribute; data-unread once something arrived meanwhile).
// Opening another chat (a new path) pins again, so a chat always opens at its newest entry.
// The browser also scrolls when the layout changes (the Schedules drawer opening beside the
// transcript narrows it and its rows grow taller): such a scroll must not unpin. A scroll is taken
// for the layout's when no input of the user's came just before it (wheel, touch, a key, the
// scrollbar, focus moving into the transcript, the page's "chatcron:scroll-intent") and the
// transcript's size changed since it was last seen; any other scroll (find in page, a screen
// reader) is the user's.
(() => {
  const SCROLLER = '[data-testid="transcript"]';
  const JUMP = '[data-testid="jump-to-latest"]';
  const SLACK_PX = 48; // this close to the bottom still counts as "at the newest entry"
  const INPUT_MS = 1000; // a scroll this soon after the user's input is theirs
  const SCROLL_KEYS = new Set(["ArrowUp", "ArrowDown", "PageUp", "PageDown", "Home", "End", " "]);

  let box = null; // the transcript element being followed
  let pinned = true;
  let path = "";
  let ownTop = -1; // the scrollTop this script set last, so its own scroll event is not the user's
  let follow = null; // MutationObserver on the transcript's content
  let resize = null; // ResizeObserver on the transcript and its rows
  let inputAt = -Infinity; // when the user last wheeled, touched, pressed a scroll key or the scrollbar
  let holding = false; // a pointer is down on the transcript (dragging its scrollbar)
  let seen = ""; // the transcript's size when last looked at

  const atBottom = (el) => el.scrollTop + el.clientHeight >= el.scrollHeight - SLACK_PX;

  const show = () => {
    const wrapper = box && box.parentElement;
    if (!wrapper) return;
    wrapper.dataset.pinned = pinned ? "true" : "false";
    if (pinned) delete wrapper.dataset.unread;
  };

  const size = () => `${box.clientWidth}x${box.clientHeight}x${box.scrollHeight}`;

  const toBottom = () => {
    if (!box) return;
    box.scrollTop = box.scrollHeight;
    ownTop = box.scrollTop;
    seen = size();
  };

  const pin = () => {
    pinned = true;
    toBottom();
    show();
  };

  const changed = () => {
    if (location.pathname !== path) {
      path = location.pathname;
      pinned = true;
    }
    if (pinned) {
      toBottom();
    } else if (box.parentElement) {
      seen = size();
      box.parentElement.dataset.unread = "true";
    }
    show();
  };

  const input = () => {
    inputAt = performance.now();
  };

  const onScroll = () => {
    if (Math.abs(box.scrollTop - ownTop) < 1) return; // the scroll this script just made
    const now = size();
    const moved = now !== seen;
    seen = now;
    if (moved && !holding && performance.now() - inputAt > INPUT_MS) {
      if (pinned) toBottom(); // the layout moved it (a narrower column, taller rows): stay at the newest
      return;
    }
    ownTop = -1;
    pinned = atBottom(box);
    show();
  };

  const press = () => {
    holding = true;
    input();
  };

  const watchRows = () => {
    resize.disconnect();
    resize.observe(box);
    for (const row of box.children) resize.observe(row);
  };

  const attach = (el) => {
    if (box) {
      box.removeEventListener("scroll", onScroll);
      for (const name of ["wheel", "touchstart", "touchmove"]) box.removeEventListener(name, input);
      box.removeEventListener("pointerdown", press);
      box.removeEventListener("focusin", input);
      follow.disconnect();
      resize.disconnect();
    }
    box = el;
    path = location.pathname;
    pinned = true;
    box.addEventListener("scroll", onScroll, { passive: true });
    for (const name of ["wheel", "touchstart", "touchmove"]) box.addEventListener(name, input, { passive: true });
    box.addEventListener("pointerdown", press);
    box.addEventListener("focusin", input);
    follow = new MutationObserver(() => {
      watchRows();
      changed();
    });
    follow.observe(box, { childList: true, subtree: true, characterData: true });
    resize = new ResizeObserver(() => {
      if (pinned) toBottom();
      else seen = size();
    });
    watchRows();
    pin();
  };

  // Pages are rendered and replaced by client-side routing: look for a new transcript whenever
  // the document's element tree changes (cheap: one attribute query per batch of changes).
  const find = () => {
    const el = document.querySelector(SCROLLER);
    if (el && el !== box) attach(el);
    else if (el && location.pathname !== path) changed();
  };
  new MutationObserver(find).observe(document.documentElement, { childList: true, subtree: true });

  document.addEventListener("pointerup", () => {
    if (holding) input(); // the last scroll of a scrollbar drag lands just after the release
    holding = false;
  });
  document.addEventListener("pointercancel", () => {
    holding = false;
  });
  // the page scrolls the transcript for the user (a fire picked in a task's history): a smooth
  // scroll that may last longer than a wheel's
  document.addEventListener("chatcron:scroll-intent", () => {
    inputAt = performance.now() + INPUT_MS;
  });
  document.addEventListener("keydown", (event) => {
    if (SCROLL_KEYS.has(event.key)) input();
  });

  document.addEventListener("click", (event) => {
    if (event.target instanceof Element && event.target.closest(JUMP)) pin();
  });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", find);
  else find();
})();
