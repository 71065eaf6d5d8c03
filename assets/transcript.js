// Keeps the chat transcript pinned to its newest entry (SPEC §16), entirely in the browser.
//
// "Pinned" changes only on a scroll the user made: content that grows (a streamed chunk, a fire,
// a page of history) never unpins, and while pinned every change scrolls to the bottom. A user who
// scrolls up is left where they are and sees the jump-to-latest button (shown by the stylesheet
// from the wrapper's data-pinned attribute; data-unread once something arrived meanwhile).
// Opening another chat (a new path) pins again, so a chat always opens at its newest entry.
(() => {
  const SCROLLER = '[data-testid="transcript"]';
  const JUMP = '[data-testid="jump-to-latest"]';
  const SLACK_PX = 48; // this close to the bottom still counts as "at the newest entry"

  let box = null; // the transcript element being followed
  let pinned = true;
  let path = "";
  let ownTop = -1; // the scrollTop this script set last, so its own scroll event is not the user's
  let follow = null; // MutationObserver on the transcript's content
  let resize = null; // ResizeObserver on the transcript and its rows

  const atBottom = (el) => el.scrollTop + el.clientHeight >= el.scrollHeight - SLACK_PX;

  const show = () => {
    const wrapper = box && box.parentElement;
    if (!wrapper) return;
    wrapper.dataset.pinned = pinned ? "true" : "false";
    if (pinned) delete wrapper.dataset.unread;
  };

  const toBottom = () => {
    if (!box) return;
    box.scrollTop = box.scrollHeight;
    ownTop = box.scrollTop;
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
      box.parentElement.dataset.unread = "true";
    }
    show();
  };

  const onScroll = () => {
    if (Math.abs(box.scrollTop - ownTop) < 1) return; // the scroll this script just made
    ownTop = -1;
    pinned = atBottom(box);
    show();
  };

  const watchRows = () => {
    resize.disconnect();
    resize.observe(box);
    for (const row of box.children) resize.observe(row);
  };

  const attach = (el) => {
    if (box) {
      box.removeEventListener("scroll", onScroll);
      follow.disconnect();
      resize.disconnect();
    }
    box = el;
    path = location.pathname;
    pinned = true;
    box.addEventListener("scroll", onScroll, { passive: true });
    follow = new MutationObserver(() => {
      watchRows();
      changed();
    });
    follow.observe(box, { childList: true, subtree: true, characterData: true });
    resize = new ResizeObserver(() => {
      if (pinned) toBottom();
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

  document.addEventListener("click", (event) => {
    if (event.target instanceof Element && event.target.closest(JUMP)) pin();
  });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", find);
  else find();
})();
