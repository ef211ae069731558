// asyncevent admin: a little progressive enhancement; every page works without it.
"use strict";

// A select marked data-autosubmit submits its form as soon as it changes.
document.addEventListener("change", (e) => {
  const el = e.target;
  if (el instanceof HTMLSelectElement && el.hasAttribute("data-autosubmit") && el.form) {
    el.form.requestSubmit();
  }
});

// A draw form's button is disabled once clicked, so a double click draws once
// (a second draw would be harmless, but it would wait for the first). So is a
// control form's (data-once): a second click would only be refused.
document.addEventListener("submit", (e) => {
  const form = e.target;
  if (!(form instanceof HTMLFormElement)) {
    return;
  }
  const button = form.querySelector("button");
  if (!button) {
    return;
  }
  if (form.id === "draw-form") {
    setTimeout(() => { button.disabled = true; button.textContent = "Drawing…"; }, 0);
  } else if (form.hasAttribute("data-once")) {
    setTimeout(() => { button.disabled = true; }, 0);
  }
});
