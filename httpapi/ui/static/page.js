// The request page's script (httpapi/page.go). Without it the page reloads itself
// (a <meta> refresh inside <noscript>); with it, the page asks the server for itself
// again after the Retry-After the server gave, no sooner, and updates in place: the
// heading, the live region's sentence (only when it changed, so that a screen
// reader hears each change once) and the rest, keeping the focus where it was. It
// counts down a held seat's time left from the milliseconds the server said were
// left, so the countdown follows the server's clock, not the browser's. The user
// may pause the updates. It fetches from the page's own origin only.
"use strict";

(() => {
  const main = () => document.getElementById("request");
  let timer = 0; // the next fetch
  let tick = 0; // the countdown's interval
  let paused = main()?.dataset.paused === "1";

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

  // countDown counts #countdown down from its data-ms, measured on the browser's
  // monotonic clock from the moment the page arrived.
  const countDown = () => {
    clearInterval(tick);
    const el = document.getElementById("countdown");
    if (!el) return;
    const end = performance.now() + Number(el.dataset.ms);
    const show = () => {
      el.textContent = el.dataset.text.replace("{left}", format(end - performance.now(), el.dataset.units));
    };
    show();
    tick = setInterval(show, 1000);
  };

  // pauseControl makes the no-script page's pause link a button that stops and
  // starts the updates without leaving the page.
  const pauseControl = () => {
    const link = document.getElementById("pause") || document.getElementById("resume");
    if (!link) return;
    const button = document.createElement("button");
    button.type = "button";
    button.id = "pause-button";
    const label = () => {
      button.textContent = paused ? link.dataset.resume : link.dataset.pause;
      button.setAttribute("aria-pressed", String(paused));
    };
    label();
    button.addEventListener("click", () => {
      paused = !paused;
      label();
      if (paused) clearTimeout(timer);
      else poll();
    });
    link.replaceWith(button);
  };

  // schedule asks for the page again after seconds (0: never).
  const schedule = (seconds) => {
    clearTimeout(timer);
    if (seconds > 0 && !paused) timer = setTimeout(poll, seconds * 1000);
  };

  // parse reads the page the server answered into an inert template: a document
  // of its own would apply the page's policy to the answer's <style>, whose nonce
  // is not this page's.
  const parse = (html) => {
    const tpl = document.createElement("template");
    tpl.innerHTML = html;
    return tpl.content;
  };

  // swap puts the page the server answered in place of the shown one.
  const swap = (doc) => {
    const next = doc.getElementById("request");
    const now = main();
    if (!next || !now) return 0;
    const focused = document.activeElement;
    const focusID = focused && now.contains(focused) ? focused.id : "";
    document.title = doc.querySelector("title")?.textContent || document.title;
    document.body.className = "state-" + next.dataset.state;
    for (const name of ["state", "refresh", "next"]) {
      if (next.dataset[name] === undefined) delete now.dataset[name];
      else now.dataset[name] = next.dataset[name];
    }
    document.getElementById("heading").textContent = doc.getElementById("heading").textContent;
    const live = document.getElementById("live");
    const said = doc.getElementById("live").textContent;
    if (live.textContent !== said) live.textContent = said;
    document.getElementById("body").replaceWith(document.importNode(doc.getElementById("body"), true));
    pauseControl();
    countDown();
    if (focusID) {
      // The same control if it is still there; else the heading, so the focus is
      // not lost to the page's start.
      (document.getElementById(focusID) || document.getElementById("heading")).focus({ preventScroll: true });
    }
    if (now.dataset.next) history.replaceState(null, "", now.dataset.next);
    return Number(next.dataset.refresh) || 0;
  };

  // poll asks for the page again; a page hidden from the user waits until it is
  // shown again.
  const poll = async () => {
    if (paused) return;
    if (document.hidden) {
      document.addEventListener("visibilitychange", poll, { once: true });
      return;
    }
    const url = main()?.dataset.next;
    if (!url) return;
    let wait = 0;
    try {
      const res = await fetch(url, { credentials: "same-origin", cache: "no-store", headers: { Accept: "text/html" } });
      const refresh = swap(parse(await res.text()));
      wait = Number(res.headers.get("Retry-After")) || refresh;
    } catch {
      wait = Math.max(Number(main()?.dataset.refresh) || 0, 5); // offline: try again
    }
    schedule(wait);
  };

  const start = () => {
    pauseControl();
    countDown();
    schedule(Number(main()?.dataset.refresh) || 0);
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
