// The few lines of script the dashboard needs beyond htmx: copying to the clipboard,
// and saving a description when its input loses focus or Enter is pressed.
"use strict";
document.addEventListener("click", function (event) {
  var button = event.target.closest("[data-copy]");
  if (!button) return;
  var status = document.getElementById("status");
  navigator.clipboard.writeText(button.getAttribute("data-copy")).then(function () {
    if (status) status.textContent = "Copied " + button.getAttribute("data-copy");
  }, function () {
    if (status) status.textContent = "Copying is not allowed here; select the text instead.";
  });
});
document.addEventListener("htmx:beforeRequest", function () {
  var status = document.getElementById("status");
  if (status) status.textContent = "";
});
document.addEventListener("htmx:afterRequest", function (event) {
  var status = document.getElementById("status");
  if (!status) return;
  if (event.detail.failed) {
    status.textContent = event.detail.xhr.responseText || "The change was not saved.";
  } else if (event.detail.elt.getAttribute("hx-swap") === "none") {
    status.textContent = "Saved";
  }
});
