// Security keys and passkeys (WebAuthn) for the Two-factor pages: a form marked
// data-webauthn="create" (register a key) or "get" (sign in with one) carries the
// server's options in data-options; on submit this asks the browser, puts the answer in
// the form's hidden "credential" field as JSON, and submits the form as usual.
"use strict";
(function () {
  function toBytes(text) {
    var base64 = text.replace(/-/g, "+").replace(/_/g, "/");
    var binary = atob(base64 + "===".slice((base64.length + 3) % 4));
    var bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes.buffer;
  }
  function toText(buffer) {
    var bytes = new Uint8Array(buffer);
    var binary = "";
    for (var i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]);
    return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  function descriptors(list) {
    return (list || []).map(function (item) {
      return { type: item.type, id: toBytes(item.id), transports: item.transports };
    });
  }
  function creationOptions(options) {
    options.challenge = toBytes(options.challenge);
    options.user.id = toBytes(options.user.id);
    options.excludeCredentials = descriptors(options.excludeCredentials);
    return { publicKey: options };
  }
  function requestOptions(options) {
    options.challenge = toBytes(options.challenge);
    options.allowCredentials = descriptors(options.allowCredentials);
    return { publicKey: options };
  }
  function answer(credential) {
    var response = credential.response;
    var body = {
      id: credential.id,
      rawId: toText(credential.rawId),
      type: credential.type,
      clientExtensionResults: credential.getClientExtensionResults(),
      authenticatorAttachment: credential.authenticatorAttachment || undefined,
      response: { clientDataJSON: toText(response.clientDataJSON) }
    };
    if (response.attestationObject) {
      body.response.attestationObject = toText(response.attestationObject);
      if (response.getTransports) body.response.transports = response.getTransports();
    } else {
      body.response.authenticatorData = toText(response.authenticatorData);
      body.response.signature = toText(response.signature);
      if (response.userHandle) body.response.userHandle = toText(response.userHandle);
    }
    return JSON.stringify(body);
  }
  function showError(text) {
    var box = document.getElementById("webauthn-error");
    if (!box) return;
    box.textContent = text;
    box.hidden = false;
  }
  document.addEventListener("submit", function (event) {
    var form = event.target.closest("form[data-webauthn]");
    if (!form) return;
    event.preventDefault();
    if (!window.PublicKeyCredential) {
      showError("This browser does not support security keys.");
      return;
    }
    var options = JSON.parse(form.getAttribute("data-options"));
    var asked = form.getAttribute("data-webauthn") === "create"
      ? navigator.credentials.create(creationOptions(options))
      : navigator.credentials.get(requestOptions(options));
    asked.then(function (credential) {
      form.querySelector("input[name=credential]").value = answer(credential);
      form.submit();
    }, function () {
      showError("The key did not answer, or the request was cancelled. Try again.");
    });
  });
})();
