// Browser notifications of new attention events while a page is open (SPEC §13).
// The inbox page's "Notify me in this browser" switch calls chatcronNotifySet(on): turning it on
// asks the browser's permission; the choice stays in this browser (localStorage). Every open page
// gets new events from the server through chatcronNotify(items); the newest id shown is kept in
// localStorage too, and each notification is tagged with its event, so two open tabs show it once.
(() => {
  const SETTING = "chatcron-notify";
  const SHOWN = "chatcron-notified-id";
  const store = (() => {
    try { return window.localStorage; } catch (e) { return null; }
  })();
  const supported = () => typeof window.Notification === "function";
  const wanted = () => !!store && store.getItem(SETTING) === "on";

  window.chatcronNotifyOn = () => supported() && wanted() && Notification.permission === "granted";

  window.chatcronNotifySet = async (on) => {
    if (!store) return false;
    if (!on || !supported()) {
      store.setItem(SETTING, "off");
      return false;
    }
    let permission = Notification.permission;
    if (permission === "default") {
      try { permission = await Notification.requestPermission(); } catch (e) { permission = "denied"; }
    }
    store.setItem(SETTING, permission === "granted" ? "on" : "off");
    return permission === "granted";
  };

  window.chatcronNotify = (items) => {
    if (!window.chatcronNotifyOn() || !Array.isArray(items)) return;
    const shown = Number(store.getItem(SHOWN) || 0);
    let newest = shown;
    for (const item of items) {
      if (!(item.id > shown)) continue;
      newest = Math.max(newest, item.id);
      try {
        const note = new Notification(String(item.title), { body: String(item.body), tag: `chatcron-${item.id}` });
        note.onclick = () => { window.focus(); window.location.assign(`/chat/${Number(item.chat_id)}`); };
      } catch (e) {
        // some browsers only notify through a service worker: nothing to show then
      }
    }
    store.setItem(SHOWN, String(newest));
  };
})();
