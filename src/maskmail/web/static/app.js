// The few lines of script the dashboard needs beyond htmx: copying to the clipboard,
// toasts for what htmx saved (or could not), and asking before a deletion in a dialog.
// Without script every one of these still works: the forms post, and a deletion (or a
// subdomain's rename) asks on a page of its own.
"use strict";
(function () {
  var timer = null;

  // A toast in the page's status line: "Saved", "Copied ...", or what went wrong (which
  // stays until the next action).
  function toast(text, failed) {
    var status = document.getElementById("status");
    if (!status) return;
    window.clearTimeout(timer);
    status.textContent = text;
    if (failed) {
      status.setAttribute("data-kind", "error");
    } else {
      status.removeAttribute("data-kind");
      timer = window.setTimeout(function () { status.textContent = ""; }, 5000);
    }
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) return;
    var text = button.getAttribute("data-copy");
    navigator.clipboard.writeText(text).then(function () {
      toast("Copied " + text, false);
    }, function () {
      toast("Copying is not allowed here; select the text instead.", true);
    });
  });

  document.addEventListener("htmx:beforeRequest", function () {
    toast("", false);
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    if (event.detail.failed) {
      var answer = event.detail.xhr && event.detail.xhr.responseText;
      toast(answer || "The change was not saved; try again.", true);
    } else if (event.detail.requestConfig && event.detail.requestConfig.verb === "post") {
      toast("Saved", false);
    }
  });
  document.addEventListener("htmx:sendError", function () {
    toast("The server could not be reached; nothing was saved.", true);
  });

  // The header's menu (a <details>, which opens without script) closes on Escape and on
  // a click elsewhere.
  function closeMenu(except) {
    var menu = document.querySelector("details.menu[open]");
    if (menu && !(except && menu.contains(except))) menu.open = false;
    return menu;
  }
  document.addEventListener("click", function (event) { closeMenu(event.target); });
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    var menu = closeMenu(null);
    if (menu) menu.querySelector("summary").focus();
  });

  // Confirmation: a form marked data-confirm leads to a page that asks (by GET, or by a
  // POST that only asks, as a rename does with the new name). With script, that page's
  // question is shown in a modal <dialog> over this one instead.
  function focusable(root) {
    return Array.prototype.filter.call(
      root.querySelectorAll("a[href], button, input, textarea, select"),
      function (el) { return !el.disabled && el.type !== "hidden"; }
    );
  }

  function ask(form, opener, html) {
    var page = new DOMParser().parseFromString(html, "text/html");
    var question = page.querySelector(".question");
    if (!question) { form.submit(); return; }
    var dialog = document.createElement("dialog");
    dialog.className = "confirm";
    dialog.appendChild(document.importNode(question, true));
    var heading = dialog.querySelector("h1");
    if (heading) {
      heading.id = "confirm-title";
      dialog.setAttribute("aria-labelledby", "confirm-title");
    }
    document.body.appendChild(dialog);
    dialog.addEventListener("close", function () {
      dialog.remove();
      if (opener && opener.isConnected) opener.focus();
    });
    dialog.addEventListener("click", function (event) {
      if (event.target.closest("[data-cancel]")) {
        event.preventDefault();
        dialog.close();
      }
    });
    // Tab and Shift+Tab go round the dialog's own controls.
    dialog.addEventListener("keydown", function (event) {
      if (event.key !== "Tab") return;
      var items = focusable(dialog);
      var first = items[0];
      var last = items[items.length - 1];
      if (event.shiftKey && document.activeElement === first) {
        event.preventDefault();
        last.focus();
      } else if (!event.shiftKey && document.activeElement === last) {
        event.preventDefault();
        first.focus();
      }
    });
    dialog.showModal();
    // Focus the safe choice first.
    var cancel = dialog.querySelector("[data-cancel]");
    if (cancel) cancel.focus();
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.hasAttribute("data-confirm") || typeof HTMLDialogElement !== "function") return;
    event.preventDefault();
    var opener = event.submitter || form.querySelector("button");
    var request = { credentials: "same-origin" };
    if (form.method === "post") {
      request.method = "POST";
      request.body = new URLSearchParams(new FormData(form));
    }
    fetch(form.action, request).then(function (answer) {
      if (!answer.ok) throw new Error(String(answer.status));
      return answer.text();
    }).then(function (html) {
      ask(form, opener, html);
    }, function () {
      // The page that asks, as without script: it says what went wrong (a name the rules
      // refuse, say), if anything.
      form.submit();
    });
  });
})();
