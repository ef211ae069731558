// The request page's script (httpapi/page.go). Without it the page reloads itself
// (a <meta> refresh inside <noscript>); with it, the page asks the server for itself
// again once the Retry-After the server gave has passed since its last answer,
// never sooner, and updates in place: the heading, the live region's sentence (only when
// it changed, so that a screen reader hears each change once) and the parts of the
// rest that changed, leaving the others (and the focus in them) alone. It counts
// the time left down from the milliseconds the server said were left, so a
// countdown follows the server's clock, not the browser's. The user may pause the
// updates. It fetches from the page's own origin only.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const main = () => $("request");
  let timer = 0; // the next ask
  let tick = 0; // the countdown's interval
  let pace = Number(main()?.dataset.refresh) || 0; // the server's seconds from one ask to the next
  let delay = pace; // this time's: the pace, or longer after answers that were not the page
  let failures = 0; // answers in a row that were not the page
  let asking = null; // the AbortController of the ask in flight
  let paused = main()?.dataset.paused === "1";
  // answered is when the server last answered, on the monotonic clock (the
  // navigation's answer at first): Retry-After counts from it, and so does the
  // time left a countdown was told.
  let answered = performance.getEntriesByType("navigation")[0]?.responseStart || performance.now();
  const askTimeout = 30000; // an ask that hangs is given up, and retried

  // format is the time left in the page's units ("min|s"), rounded up to the
  // second as the server rounds it: "3 min 20 s", "3분 20초".
  const format = (ms, units) => {
    const [m, s] = units.split("|");
    const total = Math.ceil(Math.max(ms, 0) / 1000);
    const min = Math.floor(total / 60);
    const sec = total % 60;
    if (min === 0) return sec + s;
    if (sec === 0) return min + m;
    return min + m + " " + sec + s;
  };

  // countDown counts #countdown down from its data-ms, the time left when the
  // server answered; paused, it stands still (WCAG 2.2.2).
  const countDown = () => {
    clearInterval(tick);
    const el = $("countdown");
    if (!el) return;
    const end = answered + Number(el.dataset.ms);
    const show = () => {
      el.textContent = el.dataset.text.replace("{left}", format(end - performance.now(), el.dataset.units));
    };
    show();
    if (!paused) tick = setInterval(show, 1000);
  };

  // pauseControl makes the no-script page's pause link a toggle button. Its label
  // stays "Pause updates"; aria-pressed and the sentence beside it say whether
  // they are paused.
  const pauseControl = () => {
    const link = $("pause") || $("resume");
    if (!link) return;
    const button = document.createElement("button");
    button.type = "button";
    button.id = "pause-button";
    button.textContent = link.dataset.pause;
    button.dataset.paused = link.dataset.paused;
    button.dataset.running = link.dataset.running;
    button.addEventListener("click", () => setPaused(!paused));
    link.replaceWith(button);
    showPaused();
  };

  const showPaused = () => {
    const button = $("pause-button");
    if (!button) return;
    button.setAttribute("aria-pressed", String(paused));
    $("refresh").textContent = paused ? button.dataset.paused : button.dataset.running;
  };

  const setPaused = (on) => {
    paused = on;
    showPaused();
    countDown();
    if (paused) {
      clearTimeout(timer);
      asking?.abort();
      say("");
    } else {
      schedule(delay);
    }
  };

  // say puts text in the page's own status line (#offline), which is always there,
  // so that a screen reader is told when its text changes.
  const say = (text) => {
    const el = $("offline");
    if (el && el.textContent !== text) el.textContent = text;
  };

  // schedule asks for the page again once seconds have passed since the last
  // answer (0: never).
  const schedule = (seconds) => {
    clearTimeout(timer);
    delay = seconds;
    if (seconds > 0 && !paused) timer = setTimeout(poll, Math.max(0, answered + seconds * 1000 - performance.now()));
  };

  // parse reads an answer into an inert template: a document of its own would
  // apply the page's policy to the answer's <style>, whose nonce is not this page's.
  const parse = (html) => {
    const tpl = document.createElement("template");
    tpl.innerHTML = html;
    return tpl.content;
  };

  // swapBody puts the answer's #body in place of the shown one: child by child,
  // replacing only those that changed, when both have the same children; whole
  // otherwise (a new state).
  const swapBody = (next) => {
    const now = $("body");
    const ids = (el) => Array.from(el.children, (c) => c.id).join(" ");
    // A two-step control the user opened stays open.
    for (const d of next.querySelectorAll("details[id]")) if ($(d.id)?.open) d.open = true;
    if (ids(now) !== ids(next) || Array.from(now.children).some((c) => !c.id)) {
      now.replaceWith(document.importNode(next, true));
      return;
    }
    Array.from(next.children).forEach((child, i) => {
      const shown = now.children[i];
      if (!shown.isEqualNode(child)) shown.replaceWith(document.importNode(child, true));
    });
  };

  // swapUpdates keeps the pause button while the page updates itself; once it
  // stops (a final answer), the button goes.
  const swapUpdates = (doc) => {
    const next = doc.getElementById("updates");
    if (!next) {
      $("updates")?.remove();
    } else if (!$("updates")) {
      $("live").after(document.importNode(next, true));
      pauseControl();
    }
  };

  // swap puts the page the server answered in place of the shown one and returns
  // the seconds until the next ask.
  const swap = (doc) => {
    const next = doc.getElementById("request");
    const now = main();
    const focused = document.activeElement;
    const hadFocus = focused && focused !== document.body && now.contains(focused);
    document.title = doc.querySelector("title")?.textContent || document.title;
    document.body.className = "state-" + next.dataset.state;
    for (const name of ["state", "refresh", "next"]) {
      if (next.dataset[name] === undefined) delete now.dataset[name];
      else now.dataset[name] = next.dataset[name];
    }
    $("heading").textContent = doc.getElementById("heading").textContent;
    const said = doc.getElementById("live").textContent;
    if ($("live").textContent !== said) $("live").textContent = said;
    swapUpdates(doc);
    swapBody(doc.getElementById("body"));
    countDown();
    if (hadFocus && !document.contains(focused)) {
      // The control that had the focus is gone: the same one if it came back (and
      // can take it), else the heading, so the focus is not lost to the page's start.
      $(focused.id)?.focus({ preventScroll: true });
      if (document.activeElement !== $(focused.id)) $("heading").focus({ preventScroll: true });
    }
    if (now.dataset.next) history.replaceState(null, "", now.dataset.next);
    return Number(next.dataset.refresh) || 0;
  };

  // retry keeps the shown page after an answer that was not it (a proxy's error, a
  // 503, no network), says so, and asks again later, backing off.
  const retry = (after) => {
    failures++;
    say($("offline")?.dataset.text || "");
    schedule(Math.max(after, Math.min(Math.max(pace, 5) * 2 ** (failures - 1), 60)));
  };

  // poll asks for the page again; a page hidden from the user waits until it is
  // shown again.
  const poll = async () => {
    if (paused || asking) return;
    if (document.hidden) {
      document.addEventListener("visibilitychange", poll, { once: true });
      return;
    }
    const url = main()?.dataset.next;
    if (!url) return;
    clearTimeout(timer);
    asking = new AbortController();
    try {
      const signal = AbortSignal.any([asking.signal, AbortSignal.timeout(askTimeout)]);
      const res = await fetch(url, { credentials: "same-origin", cache: "no-store", headers: { Accept: "text/html" }, signal });
      answered = performance.now(); // the answer's headers: the server's "now"
      const doc = parse(await res.text());
      if (paused) return;
      const after = Number(res.headers.get("Retry-After")) || 0;
      if (res.status >= 500 || !doc.getElementById("request")) {
        retry(after);
        return;
      }
      failures = 0;
      say("");
      const refresh = swap(doc);
      pace = after || refresh;
      schedule(pace);
    } catch {
      if (!paused) {
        answered = performance.now();
        retry(0);
      }
    } finally {
      asking = null;
    }
  };

  const start = () => {
    pauseControl();
    countDown();
    schedule(pace);
    // A tab shown again asks at once if its next ask is overdue.
    document.addEventListener("visibilitychange", () => {
      if (!document.hidden && delay > 0 && performance.now() - answered >= delay * 1000) poll();
    });
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
