// Labels every <time data-cc-time datetime="…ISO UTC…"> in the browser's zone (SPEC §16
// `event-time`): "14:05" for today, "Dec 1, 14:05" earlier this year, "Dec 1, 2025, 14:05" before
// that, written to its data-shown attribute, which the page's style shows as ::after content; the
// title holds the full date, seconds and zone. The label is not the element's text: React renders
// the element empty and never owns what this script writes, and an event's text (what a reader
// copies, what tests compare) stays the message alone. A changed datetime is seen by the observer;
// a minute timer moves yesterday's rows to the dated form after midnight.
(() => {
  const SELECTOR = "time[data-cc-time]";
  const clock = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
  const day = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric" });
  const dayYear = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", year: "numeric" });
  const full = new Intl.DateTimeFormat(undefined, {
    weekday: "long", year: "numeric", month: "long", day: "numeric",
    hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23", timeZoneName: "short",
  });

  // The text for an instant, seen at `now` (both Dates), in this browser's zone.
  const label = (when, now) => {
    if (when.toDateString() === now.toDateString()) return clock.format(when);
    const date = when.getFullYear() === now.getFullYear() ? day.format(when) : dayYear.format(when);
    return `${date}, ${clock.format(when)}`;
  };

  const paint = (el, now) => {
    const when = new Date(el.getAttribute("datetime") || "");
    const text = Number.isNaN(when.getTime()) ? "" : label(when, now);
    if (el.dataset.shown !== text) el.dataset.shown = text;
    const title = text ? full.format(when) : "";
    if (el.title !== title) el.title = title;
  };

  const paintAll = (root) => {
    const now = new Date();
    if (root.matches && root.matches(SELECTOR)) paint(root, now);
    if (root.querySelectorAll) root.querySelectorAll(SELECTOR).forEach((el) => paint(el, now));
  };

  window.chatcronTime = { label: (iso, nowIso) => label(new Date(iso), new Date(nowIso)) };

  const start = () => {
    paintAll(document.body);
    new MutationObserver((changes) => {
      for (const change of changes) {
        if (change.type === "attributes") paintAll(change.target);
        else change.addedNodes.forEach((node) => paintAll(node));
      }
    }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ["datetime"] });
    setInterval(() => paintAll(document.body), 60_000);
  };
  if (document.body) start();
  else document.addEventListener("DOMContentLoaded", start);
})();
