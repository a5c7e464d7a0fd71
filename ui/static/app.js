/*
 * pastenode: the one script of the web UI. Every page works without it,
 * except what only a browser can do: encrypting and decrypting, copying.
 *
 * Ciphertext text format of encrypted pastes (the server stores and serves
 * only this; it never sees a key, a password or a plaintext):
 *
 *   pn1.k.<iv>.<ciphertext>                          random key
 *   pn1.p.<iterations>.<salt>.<iv>.<ciphertext>      password
 *
 * - Every binary field is base64url without padding.
 * - AES-256-GCM, 12-byte iv, the 128-bit tag appended to the ciphertext (as
 *   WebCrypto returns it), no additional data. The plaintext is UTF-8 text.
 * - Random key: 32 random bytes, base64url without padding, carried only in
 *   the URL fragment: /ID#KEY.
 * - Password: key = PBKDF2-HMAC-SHA256(UTF-8 password, 16-byte random salt,
 *   iterations (600000 when made here), 32 bytes). The link has no key.
 *
 * The page also decrypts, but never makes, the old Rust pastebin's
 * encrypted pastes, which its page wrote with CryptoJS.AES.encrypt(text,
 * passphrase) in OpenSSL's format:
 *
 *   base64("Salted__" <salt> <ciphertext>)           passphrase
 *
 * - An 8-byte salt; AES-256-CBC with PKCS#7 padding.
 * - The key and iv are OpenSSL's EVP_BytesToKey with MD5, one round:
 *   D1 = MD5(passphrase || salt), Di = MD5(Di-1 || passphrase || salt),
 *   key = D1 || D2, iv = D3. The passphrase is UTF-8.
 * - base64 as openssl enc -a writes it: standard, padded, and whitespace
 *   (its line breaks) is ignored.
 *
 * The package documentation of ui (doc.go) shows how to decrypt in a shell.
 */
"use strict";

(function () {
  var ITERATIONS = 600000;
  var MAX_ITERATIONS = 100000000; // refuse absurd work from a hostile paste
  var WRONG = "Could not decrypt: wrong key or password";
  var subtle = window.crypto && window.crypto.subtle;

  function $(id) {
    return document.getElementById(id);
  }

  // BASE is the path prefix the node serves under ("" at the root).
  var BASE = document.body.getAttribute("data-base") || "";

  // ---- delete tokens --------------------------------------------------------
  //
  // The delete token of a paste made here is kept in this browser's
  // localStorage only: never in a URL (which would reach a server log or a
  // Referer) and never in a cookie. A paste made by a form post without
  // this script cannot be deleted from the page: its token came back in a
  // header the browser does not show.

  function tokenKey(id) {
    return "pastenode.delete-token." + id;
  }

  // keepToken uses storage(), defined with the create token below.
  function keepToken(id, token) {
    var s = storage();
    if (s && token) {
      try {
        s.setItem(tokenKey(id), token);
      } catch (e) {
        // full or refused: the paste simply gets no delete control
      }
    }
  }

  // ---- base64url and random bytes -----------------------------------------

  function b64uEncode(bytes) {
    var s = "";
    for (var i = 0; i < bytes.length; i += 0x8000) {
      s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    }
    return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function b64uDecode(text) {
    if (!/^[A-Za-z0-9_-]*$/.test(text)) {
      throw new Error("not base64url");
    }
    var s = text.replace(/-/g, "+").replace(/_/g, "/");
    var bin = atob(s + "===".slice((s.length + 3) % 4));
    var out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) {
      out[i] = bin.charCodeAt(i);
    }
    return out;
  }

  function randomBytes(n) {
    return window.crypto.getRandomValues(new Uint8Array(n));
  }

  // ---- encryption --------------------------------------------------------

  function aesKey(raw, usage) {
    return subtle.importKey("raw", raw, { name: "AES-GCM" }, false, [usage]);
  }

  async function passwordKey(password, salt, iterations, usage) {
    var base = await subtle.importKey("raw", new TextEncoder().encode(password), "PBKDF2", false, ["deriveKey"]);
    return subtle.deriveKey(
      { name: "PBKDF2", hash: "SHA-256", salt: salt, iterations: iterations },
      base, { name: "AES-GCM", length: 256 }, false, [usage]);
  }

  // seal encrypts text, with password when it is not empty, else with a new
  // random key. It returns the ciphertext text and the key for the fragment
  // ("" in password mode).
  async function seal(text, password) {
    var fields, key, fragment = "";
    if (password) {
      var salt = randomBytes(16);
      key = await passwordKey(password, salt, ITERATIONS, "encrypt");
      fields = ["pn1", "p", String(ITERATIONS), b64uEncode(salt)];
    } else {
      var raw = randomBytes(32);
      key = await aesKey(raw, "encrypt");
      fields = ["pn1", "k"];
      fragment = b64uEncode(raw);
    }
    var iv = randomBytes(12);
    var data = await subtle.encrypt({ name: "AES-GCM", iv: iv }, key, new TextEncoder().encode(text));
    fields.push(b64uEncode(iv), b64uEncode(new Uint8Array(data)));
    return { text: fields.join("."), key: fragment };
  }

  // ---- the old pastebin's OpenSSL format (decrypt only) ------------------
  //
  // WebCrypto has AES-CBC but no MD5, which OpenSSL's key derivation needs,
  // so md5 is here: RFC 1321, over bytes.

  var MD5_SHIFT = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21];
  var MD5_K = [];
  for (var ki = 0; ki < 64; ki++) {
    MD5_K[ki] = Math.floor(Math.abs(Math.sin(ki + 1)) * 4294967296) | 0;
  }

  function md5(bytes) {
    var n = bytes.length;
    var words = (((n + 8) >>> 6) + 1) * 16; // whole 64-byte blocks, padding included
    var x = new Int32Array(words);
    for (var i = 0; i < n; i++) {
      x[i >> 2] |= bytes[i] << ((i % 4) * 8);
    }
    x[n >> 2] |= 0x80 << ((n % 4) * 8);
    x[words - 2] = n * 8; // the length in bits, low word (wraps to 32 bits)
    x[words - 1] = Math.floor(n / 0x20000000); // and high word
    var h = [0x67452301, 0xefcdab89 | 0, 0x98badcfe | 0, 0x10325476];
    for (var j = 0; j < words; j += 16) {
      var a = h[0], b = h[1], c = h[2], d = h[3];
      for (var r = 0; r < 64; r++) {
        var f, g;
        if (r < 16) {
          f = (b & c) | (~b & d);
          g = r;
        } else if (r < 32) {
          f = (d & b) | (~d & c);
          g = (5 * r + 1) % 16;
        } else if (r < 48) {
          f = b ^ c ^ d;
          g = (3 * r + 5) % 16;
        } else {
          f = c ^ (b | ~d);
          g = (7 * r) % 16;
        }
        var sum = (a + f + MD5_K[r] + x[j + g]) | 0;
        var s = MD5_SHIFT[(r >> 4) * 4 + (r % 4)];
        a = d;
        d = c;
        c = b;
        b = (b + ((sum << s) | (sum >>> (32 - s)))) | 0;
      }
      h[0] = (h[0] + a) | 0;
      h[1] = (h[1] + b) | 0;
      h[2] = (h[2] + c) | 0;
      h[3] = (h[3] + d) | 0;
    }
    var out = new Uint8Array(16);
    for (var w = 0; w < 16; w++) {
      out[w] = (h[w >> 2] >>> ((w % 4) * 8)) & 0xff;
    }
    return out;
  }

  // openSSLKey derives the 32-byte key and 16-byte iv of OpenSSL's
  // EVP_BytesToKey with MD5 and one round.
  function openSSLKey(passphrase, salt) {
    var pass = new TextEncoder().encode(passphrase);
    var out = new Uint8Array(48);
    var prev = new Uint8Array(0);
    for (var have = 0; have < out.length; have += 16) {
      var buf = new Uint8Array(prev.length + pass.length + salt.length);
      buf.set(prev);
      buf.set(pass, prev.length);
      buf.set(salt, prev.length + pass.length);
      prev = md5(buf);
      out.set(prev, have);
    }
    return { key: out.subarray(0, 32), iv: out.subarray(32) };
  }

  var SALTED = "Salted__";

  // parseOpenSSL reads the old pastebin's format, or returns null.
  function parseOpenSSL(text) {
    var b64 = text.replace(/\s+/g, "");
    if (b64.length % 4 !== 0 || !/^[A-Za-z0-9+\/]+={0,2}$/.test(b64)) {
      return null;
    }
    var bin = atob(b64);
    if (bin.slice(0, 8) !== SALTED || bin.length < 32 || (bin.length - 16) % 16 !== 0) {
      return null;
    }
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) {
      bytes[i] = bin.charCodeAt(i);
    }
    return { mode: "password", cipher: "openssl", salt: bytes.subarray(8, 16), data: bytes.subarray(16) };
  }

  // parse splits ciphertext text into its fields, or throws.
  function parse(text) {
    var openssl = parseOpenSSL(text);
    if (openssl) {
      return openssl;
    }
    var f = text.trim().split(".");
    try {
      if (f[0] === "pn1" && f[1] === "k" && f.length === 4) {
        return { mode: "key", iv: b64uDecode(f[2]), data: b64uDecode(f[3]) };
      }
      var n = Number(f[2]);
      if (f[0] === "pn1" && f[1] === "p" && f.length === 6 && /^[0-9]{1,9}$/.test(f[2]) && n >= 1 && n <= MAX_ITERATIONS) {
        return { mode: "password", iterations: n, salt: b64uDecode(f[3]), iv: b64uDecode(f[4]), data: b64uDecode(f[5]) };
      }
    } catch (e) {
      // a field that is not base64url: fall through to the message
    }
    throw new Error("Could not decrypt: this paste is not in a format this page knows.");
  }

  // unseal decrypts a parsed paste with the fragment key or the password;
  // any failure (bad key, wrong password, tampering) rejects with WRONG.
  async function unseal(box, secret) {
    try {
      var plain;
      if (box.cipher === "openssl") {
        var derived = openSSLKey(secret, box.salt);
        var cbc = await subtle.importKey("raw", derived.key, { name: "AES-CBC" }, false, ["decrypt"]);
        plain = await subtle.decrypt({ name: "AES-CBC", iv: derived.iv }, cbc, box.data);
      } else {
        var key = box.mode === "key"
          ? await aesKey(b64uDecode(secret), "decrypt")
          : await passwordKey(secret, box.salt, box.iterations, "decrypt");
        plain = await subtle.decrypt({ name: "AES-GCM", iv: box.iv }, key, box.data);
      }
      // A wrong passphrase that happens to leave valid padding gives
      // bytes that are not UTF-8, which this refuses too.
      return new TextDecoder("utf-8", { fatal: true }).decode(plain);
    } catch (e) {
      throw new Error(WRONG);
    }
  }

  // ---- showing a paste ----------------------------------------------------

  // request is fetch with a plain message when the server cannot be reached
  // (each browser words that TypeError differently).
  async function request(url, options) {
    try {
      return await fetch(url, options);
    } catch (e) {
      throw new Error("Could not reach the server.");
    }
  }

  function showError(msg) {
    var el = $("decrypt-error");
    if (el) {
      el.textContent = msg;
      el.hidden = !msg;
    }
  }

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    // Plain HTTP has no clipboard API; a selected textarea still copies.
    return new Promise(function (resolve, reject) {
      var ta = document.createElement("textarea");
      ta.className = "offscreen";
      ta.value = text;
      ta.setAttribute("readonly", "");
      document.body.appendChild(ta);
      ta.select();
      var ok = false;
      try {
        ok = document.execCommand("copy");
      } catch (e) {
        ok = false;
      }
      ta.remove();
      if (ok) {
        resolve();
      } else {
        reject(new Error("copy failed"));
      }
    });
  }

  // enableActions turns on the buttons that need the script, once #paste
  // holds the text.
  function enableActions(paste) {
    var copy = $("copy");
    if (copy && copy.hidden) {
      copy.hidden = false;
      copy.addEventListener("click", function () {
        var label = copy.textContent;
        copyText(paste.textContent).then(function () {
          copy.textContent = "Copied";
        }, function () {
          copy.textContent = "Copy failed";
        }).then(function () {
          setTimeout(function () { copy.textContent = label; }, 1500);
        });
      });
    }
    var wrap = $("wrap");
    if (wrap && wrap.hidden) {
      wrap.hidden = false;
      wrap.addEventListener("click", function () {
        var on = paste.classList.toggle("wrap");
        wrap.setAttribute("aria-pressed", String(on));
      });
    }
    // Burned and encrypted pastes cannot be fetched again: the download is
    // made from the text on the page.
    var dl = $("download");
    if (dl && dl.hasAttribute("data-from-page")) {
      var blob = new Blob([paste.textContent], { type: "text/plain;charset=utf-8" });
      dl.href = URL.createObjectURL(blob);
      dl.hidden = false;
    }
  }

  // decryptInto decrypts ciphertext text into paste: with the key from the
  // URL fragment, or with a password asked for in #unlock-form, as often as
  // the user retries.
  function decryptInto(paste, text) {
    var box;
    try {
      box = parse(text);
    } catch (e) {
      paste.textContent = "";
      showError(e.message);
      return;
    }
    var done = function (plain) {
      showError("");
      paste.textContent = plain;
      paste.setAttribute("data-state", "decrypted");
      enableActions(paste);
    };

    if (box.mode === "key") {
      var fail = function (msg) {
        paste.textContent = "";
        showError(msg);
        // A key pasted into the address bar changes only the fragment,
        // which does not reload the page. Retry with it (never on a burn
        // page: there the ciphertext is already gone from the server).
        if ($("ciphertext")) {
          window.addEventListener("hashchange", function () { location.reload(); }, { once: true });
        }
      };
      var key = location.hash.slice(1);
      if (!key) {
        fail("Could not decrypt: the link has no key (the part after #).");
        return;
      }
      unseal(box, key).then(done, function (e) { fail(e.message); });
      return;
    }

    var form = $("unlock-form");
    var input = $("unlock-password");
    var button = $("unlock");
    paste.textContent = "Enter the password to decrypt this paste.";
    form.hidden = false;
    input.focus();
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      button.disabled = true;
      showError("");
      paste.textContent = "Decrypting…";
      unseal(box, input.value).then(function (plain) {
        form.hidden = true;
        done(plain);
      }, function (e) {
        paste.textContent = "Enter the password to decrypt this paste.";
        showError(e.message);
        input.select();
      }).then(function () {
        button.disabled = false;
      });
    });
  }

  var NO_CRYPTO = "This browser cannot decrypt here: decryption needs a secure (HTTPS) page and WebCrypto.";

  function initPaste() {
    var paste = $("paste");
    if (!paste) {
      return;
    }
    var ct = $("ciphertext");
    if (!ct) {
      enableActions(paste);
      return;
    }
    if (!subtle) {
      paste.textContent = "";
      showError(NO_CRYPTO);
      return;
    }
    decryptInto(paste, ct.textContent);
  }

  // initBurn lets an encrypted burn paste be revealed by the script: the
  // click fetches /raw/ID (which consumes it) and decrypts it on the page,
  // so the key never leaves the browser. Plain burn pastes keep the form.
  function initBurn() {
    var form = $("reveal-form");
    if (!form || form.getAttribute("data-encrypted") !== "true") {
      return;
    }
    var button = $("reveal");
    if (!subtle) {
      // Revealing would destroy a paste that this page cannot decrypt.
      button.disabled = true;
      $("reveal-unavailable").hidden = false;
      return;
    }
    form.addEventListener("submit", async function (ev) {
      ev.preventDefault();
      button.disabled = true;
      var box = $("revealed");
      var paste = $("paste");
      if (!paste) {
        paste = document.createElement("pre");
        paste.id = "paste";
        paste.className = "chroma";
        box.appendChild(paste);
      }
      paste.textContent = "Decrypting…";
      var text, res;
      try {
        res = await request(BASE + "/raw/" + encodeURIComponent(form.getAttribute("data-id")), { cache: "no-store" });
        if (res.status === 404) {
          throw new Error("This paste does not exist, has expired, or was already read.");
        }
        if (!res.ok) {
          throw new Error("The server answered " + res.status + ": " + (await res.text()).trim());
        }
        text = await res.text();
      } catch (e) {
        paste.textContent = "";
        box.hidden = false;
        showError(e.message);
        button.disabled = res !== undefined && res.status === 404; // retry unless it is gone
        return;
      }
      $("burn").hidden = true;
      box.hidden = false;
      decryptInto(paste, text);
    });
  }

  // ---- line links ---------------------------------------------------------
  //
  // Each line is span.line#L<n>, whose number is a link to #L<n>: without
  // the script the browser goes there and :target marks it. The script
  // marks ranges too, #L12-L20: a shift-click on a number extends from
  // the line last clicked or linked to. It marks with the class "marked",
  // and puts "marking" on #paste, which turns the :target mark off, as a
  // range in the URL has no element of its own. On a Markdown paste a line
  // or a range shows the source (data-view on the article).

  var LINES = /^#L([0-9]{1,9})(?:-L([0-9]{1,9}))?$/;

  function initLines() {
    var paste = $("paste");
    var code = paste && paste.querySelector(":scope > code");
    if (!code) {
      return; // nothing to mark, or an encrypted paste: its fragment is the key
    }
    var article = paste.closest("article");
    var markdown = !!$("rendered");
    var anchor = 0; // the line a shift-click extends from
    paste.classList.add("marking");

    // mark marks the lines the fragment names, and returns the first.
    var mark = function () {
      code.querySelectorAll(".line.marked").forEach(function (el) {
        el.classList.remove("marked");
      });
      var m = LINES.exec(location.hash);
      if (markdown && (m || location.hash === "#paste")) {
        article.setAttribute("data-view", "source");
      } else {
        article.removeAttribute("data-view");
      }
      if (!m) {
        return null;
      }
      var from = Number(m[1]), to = m[2] ? Number(m[2]) : from;
      if (from > to) {
        var t = from;
        from = to;
        to = t;
      }
      // The loop ends at the first line past the last.
      for (var i = from; i <= to; i++) {
        var line = document.getElementById("L" + i);
        if (!line) {
          break;
        }
        line.classList.add("marked");
      }
      return document.getElementById("L" + from);
    };
    // fromURL marks what the URL names, scrolls to it and takes its first
    // line as the anchor.
    var fromURL = function () {
      var first = mark();
      if (first) {
        anchor = Number(first.id.slice(1));
        first.scrollIntoView({ block: "start" });
      }
    };
    fromURL();
    window.addEventListener("hashchange", fromURL);
    window.addEventListener("popstate", fromURL);

    // A shift-click would select text from the last click, and open the
    // link in a new window.
    code.addEventListener("mousedown", function (ev) {
      if (ev.shiftKey && ev.target.closest("a.ln")) {
        ev.preventDefault();
      }
    });
    code.addEventListener("click", function (ev) {
      var ln = ev.target.closest("a.ln");
      if (!ln) {
        return;
      }
      var n = Number(ln.parentNode.id.slice(1));
      if (!ev.shiftKey) {
        anchor = n; // the link does the rest, as without the script
        return;
      }
      ev.preventDefault();
      anchor = anchor || n;
      var from = Math.min(anchor, n), to = Math.max(anchor, n);
      history.pushState(null, "", "#L" + from + (from === to ? "" : "-L" + to));
      mark();
    });
  }

  // ---- the create token ---------------------------------------------------

  var TOKEN_KEY = "pastenode.createToken";

  function storage() {
    try {
      return window.localStorage;
    } catch (e) {
      return null; // blocked by the browser's settings
    }
  }

  // initToken fills the create token field (shown only when the node needs
  // one) from localStorage, where it is kept only when the user ticks
  // "remember". It returns a function to call on submit, which stores or
  // forgets the token as the box says, and returns the token.
  function initToken(form) {
    var input = form.elements.namedItem("token");
    if (!input) {
      return function () { return ""; };
    }
    var box = $("remember-token");
    var store = storage();
    if (store) {
      $("remember-option").hidden = false;
      var saved = store.getItem(TOKEN_KEY);
      if (saved) {
        input.value = saved;
        box.checked = true;
      }
    }
    return function () {
      if (store) {
        if (box.checked) {
          store.setItem(TOKEN_KEY, input.value);
        } else {
          store.removeItem(TOKEN_KEY);
        }
      }
      return input.value;
    };
  }

  // formatSize writes a byte count in the units and precision of the
  // server's pages (pastenode.FormatSize): "512 bytes", "1.5 KiB", "12 MiB".
  function formatSize(n) {
    if (n < 1024) {
      return n === 1 ? "1 byte" : n + " bytes";
    }
    var units = ["KiB", "MiB", "GiB", "TiB"], v = n / 1024, u = 0;
    for (; v >= 1024 && u < units.length - 1; u++) {
      v /= 1024;
    }
    return v.toFixed(v < 10 ? 1 : 0).replace(/\.0$/, "") + " " + units[u];
  }

  // ---- files --------------------------------------------------------------
  //
  // A file picked with #file or dropped on the form fills the content, its
  // name the title, and the language the server's guess from the name
  // (GET /api/v1/lang, chroma's own patterns). A file over the size limit
  // is refused before it is read, and one that is not UTF-8 text is not
  // loaded. The textarea would turn CRLF into LF, so the file's own text
  // is what is sent, as long as the content is left as it was loaded.

  // textOf is bytes as UTF-8 text, or null for what looks binary: bytes
  // that are not UTF-8, or a NUL, which text does not hold.
  function textOf(bytes) {
    if (bytes.indexOf(0) >= 0) {
      return null;
    }
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch (e) {
      return null;
    }
  }

  // initFiles sets up #file and dropping for the form, with max the size
  // limit (0: none) and say to show an error. It returns a function that
  // gives the text to send.
  function initFiles(form, max, say) {
    var field = function (name) { return form.elements.namedItem(name); };
    var content = field("content");
    var loaded = null; // {text, shown}: the file's text and the textarea's
    var loads = 0; // a newer file wins over the guess for an older one

    var guessLang = async function (name, load) {
      try {
        var res = await fetch(BASE + "/api/v1/lang?file=" + encodeURIComponent(name), { headers: { "Accept": "application/json" } });
        var lang = res.ok ? (await res.json()).lang : null;
        var select = field("lang");
        if (load === loads && typeof lang === "string" && Array.prototype.some.call(select.options, function (o) { return o.value === lang; })) {
          select.value = lang;
        }
      } catch (e) {
        // no guess: the language stays as it was
      }
    };
    var take = async function (file) {
      var load = ++loads;
      say("");
      if (max && file.size > max) {
        say("“" + file.name + "” is " + formatSize(file.size) + ", over the limit of " + formatSize(max) + ": it was not loaded.");
        return;
      }
      var bytes;
      try {
        bytes = new Uint8Array(await file.arrayBuffer());
      } catch (e) {
        say("“" + file.name + "” could not be read.");
        return;
      }
      var text = textOf(bytes);
      if (text === null) {
        say("“" + file.name + "” looks like a binary file, not text: it was not loaded. Only text can be pasted here.");
        return;
      }
      if (load !== loads) {
        return;
      }
      content.value = text;
      loaded = { text: text, shown: content.value };
      field("title").value = file.name.slice(0, 200);
      guessLang(file.name, load);
    };

    var input = $("file");
    $("file-option").hidden = false;
    input.addEventListener("change", function () {
      if (input.files.length) {
        take(input.files[0]);
      }
    });
    var hasFiles = function (ev) {
      return ev.dataTransfer && Array.prototype.indexOf.call(ev.dataTransfer.types, "Files") >= 0;
    };
    form.addEventListener("dragover", function (ev) {
      if (hasFiles(ev)) {
        ev.preventDefault(); // lets the file drop here rather than open
        form.classList.add("dropping");
      }
    });
    form.addEventListener("dragleave", function (ev) {
      if (!form.contains(ev.relatedTarget)) {
        form.classList.remove("dropping");
      }
    });
    form.addEventListener("drop", function (ev) {
      form.classList.remove("dropping");
      if (hasFiles(ev) && ev.dataTransfer.files.length) {
        ev.preventDefault();
        take(ev.dataTransfer.files[0]);
      }
    });
    return function () {
      return loaded && content.value === loaded.shown ? loaded.text : content.value;
    };
  }

  // ---- the new-paste form -------------------------------------------------

  function initForm() {
    var form = $("new-paste");
    if (!form) {
      return;
    }
    var field = function (name) { return form.elements.namedItem(name); };
    var content = field("content");
    var encrypt = field("encrypt");
    var password = field("password");
    var submit = $("submit");
    var error = $("form-error");
    var takeToken = initToken(form);
    var max = Number(form.getAttribute("data-max-size")) || 0;
    var say = function (msg) {
      error.textContent = msg;
      error.hidden = !msg;
    };
    var textToSend = initFiles(form, max, say);

    content.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        submit.click(); // runs validation and the submit handler, unlike form.submit()
      }
    });

    // Without WebCrypto the server would store plaintext under an
    // "encrypted" tick, so the option exists only where it works.
    var keepKey = $("keep-key");
    var sync = function () {
      password.disabled = !encrypt.checked;
      $("password-option").hidden = !encrypt.checked;
      // A key can be kept only where there is one: not with a password.
      $("keep-key-option").hidden = !encrypt.checked || password.value !== "" || !storage();
    };
    if (subtle) {
      encrypt.disabled = false;
      $("encrypt-option").hidden = false;
      encrypt.addEventListener("change", sync);
      password.addEventListener("input", sync);
      sync();
    }
    var label = submit.textContent;
    var ready = function () {
      submit.disabled = false;
      submit.textContent = label;
    };
    // Back from the new paste, the browser may show this page as it was
    // left: busy, or with the encrypt box ticked by its form restore.
    window.addEventListener("pageshow", function () {
      ready();
      if (subtle) {
        sync();
      }
    });

    var fail = function (msg) {
      say(msg);
      ready();
    };

    // The script sends every paste itself, as JSON, so that it gets the
    // delete token back and keeps it for the paste's page; without the
    // script the browser posts the form.
    form.addEventListener("submit", async function (ev) {
      var token = takeToken();
      ev.preventDefault();
      error.hidden = true;
      submit.disabled = true;
      var encrypted = !!subtle && encrypt.checked;
      try {
        var sealed = { text: textToSend(), key: "" };
        if (encrypted) {
          submit.textContent = "Encrypting…";
          sealed = await seal(sealed.text, password.value);
        }
        // The limit is on what the server stores: the ciphertext of an
        // encrypted paste, which is a third larger than its text.
        var size = new TextEncoder().encode(sealed.text).length;
        if (max && size > max) {
          throw new Error((encrypted ? "Encrypted, this paste is " : "This paste is ") + formatSize(size) +
            ", over the limit of " + formatSize(max) + ": nothing was sent.");
        }
        submit.textContent = "Sending…";
        var headers = { "Content-Type": "application/json", "Accept": "application/json" };
        if (token) {
          headers["X-Paste-Token"] = token;
        }
        var res = await request(BASE + "/api/v1/pastes", {
          method: "POST",
          headers: headers,
          body: JSON.stringify({
            content: sealed.text,
            title: field("title").value,
            lang: field("lang").value,
            expire: field("expire").value,
            burn: field("burn").checked,
            encrypted: encrypted
          })
        });
        var body = await res.json().catch(function () { return null; });
        if (!res.ok || !body || !body.id) {
          throw new Error((body && body.error) || ("The server answered " + res.status + "."));
        }
        keepToken(body.id, body.delete_token);
        remember({
          id: body.id, title: body.title, lang: body.lang, size: body.size, created: Date.now(),
          expires: body.expires_at ? Date.parse(body.expires_at) : null, burn: body.burn,
          encrypted: encrypted, key: keepKey.checked ? sealed.key : ""
        });
        location.assign(BASE + "/" + encodeURIComponent(body.id) + (sealed.key ? "#" + sealed.key : ""));
      } catch (e) {
        fail(e.message);
      }
    });
  }

  // ---- the delete control -----------------------------------------------

  // initDelete shows the delete button on the page of a paste whose token
  // this browser kept, asks for confirmation, and sends DELETE with the
  // token in the X-Delete-Token header.
  function initDelete() {
    var button = $("delete");
    var s = storage();
    if (!button || !s) {
      return;
    }
    var id = button.getAttribute("data-id");
    var token = s.getItem(tokenKey(id));
    if (!token) {
      return;
    }
    var confirmBox = $("delete-confirm");
    var yes = $("delete-yes");
    var status = $("delete-status");
    var say = function (msg) {
      status.textContent = msg;
      status.hidden = !msg;
    };
    button.hidden = false;
    button.addEventListener("click", function () {
      confirmBox.hidden = false;
      yes.focus();
    });
    $("delete-no").addEventListener("click", function () {
      confirmBox.hidden = true;
    });
    yes.addEventListener("click", async function () {
      yes.disabled = true;
      say("");
      try {
        var res = await request(BASE + "/" + encodeURIComponent(id), {
          method: "DELETE",
          headers: { "X-Delete-Token": token }
        });
        if (res.status !== 204 && res.status !== 404) {
          throw new Error("Could not delete: the server answered " + res.status + ": " + (await res.text()).trim());
        }
      } catch (e) {
        say(e.message);
        yes.disabled = false;
        return;
      }
      forget(id);
      confirmBox.hidden = true;
      button.hidden = true;
      var paste = $("paste");
      if (paste) {
        paste.textContent = "";
        paste.hidden = true;
      }
      // The actions and the burn notice lead to a paste that is gone.
      document.querySelectorAll("nav.actions, #burn, #revealed").forEach(function (el) {
        el.hidden = true;
      });
      say("This paste has been deleted.");
      document.body.setAttribute("data-deleted", "true");
    });
  }

  // ---- this browser's pastes ---------------------------------------------
  //
  // The front page lists the pastes made here, from a record the form
  // keeps in localStorage for each: id, title, language, size, when it
  // was made, its expiry, burn, encrypted, and the key only when the user
  // ticked "keep the key". The list itself never leaves the browser. On
  // each load the page drops the pastes past their expiry, and asks the
  // server about each other one on its own, with HEAD /api/v1/pastes/ID
  // (metadata: it never burns), dropping those it no longer has.

  // LIST_KEY names the list of the node at BASE: nodes under different
  // base paths of one origin share its storage.
  var LIST_KEY = "pastenode.pastes" + BASE;
  var LIST_MAX = 100; // the newest; each load checks them all
  var CHECKS = 4; // metadata requests in flight at once

  function listed() {
    var s = storage();
    try {
      var list = JSON.parse((s && s.getItem(LIST_KEY)) || "[]");
      return Array.isArray(list) ? list : [];
    } catch (e) {
      return [];
    }
  }

  function keepListed(list) {
    var s = storage();
    try {
      if (list.length) {
        s.setItem(LIST_KEY, JSON.stringify(list.slice(0, LIST_MAX)));
      } else {
        s.removeItem(LIST_KEY);
      }
    } catch (e) {
      // no storage, or full: the list is not kept
    }
  }

  function remember(entry) {
    keepListed([entry].concat(listed().filter(function (e) { return e.id !== entry.id; })));
  }

  // forget drops a paste from the list, and its delete token.
  function forget(id) {
    keepListed(listed().filter(function (e) { return e.id !== id; }));
    var s = storage();
    if (s) {
      s.removeItem(tokenKey(id));
    }
  }

  function element(tag, className, text) {
    var el = document.createElement(tag);
    el.className = className;
    el.textContent = text || "";
    return el;
  }

  // mineEntry is the list's entry of paste e, as li[data-id]: its title,
  // what is known of it (labels maps language names to the form's
  // labels), Open, and Delete with its confirmation when this browser
  // holds its token, which calls del(token).
  function mineEntry(e, labels, now, del) {
    var li = element("li", "mine-item");
    li.setAttribute("data-id", e.id);
    var facts = [labels[e.lang] || e.lang || labels[""], formatSize(e.size), "made " + relTime(e.created, now),
      e.burn ? "burns after reading" : e.expires ? "expires " + relTime(e.expires, now) : "never expires"];
    if (e.encrypted) {
      facts.push(e.key ? "encrypted" : "encrypted, key not kept");
    }
    var what = element("span", "what");
    what.append(element("strong", "title", e.title || "Paste " + e.id), element("span", "hint", facts.join(" · ")));
    var open = element("a", "button", "Open");
    open.href = BASE + "/" + encodeURIComponent(e.id) + (e.key ? "#" + e.key : "");
    var acts = element("span", "acts");
    acts.append(open);
    li.append(what, acts);
    var token = storage().getItem(tokenKey(e.id));
    if (!token) {
      return li;
    }
    var button = function (className, text) {
      var b = element("button", className, text);
      b.type = "button";
      return b;
    };
    var ask = button("danger delete", "Delete");
    var confirmBox = element("span", "acts", "Delete it for everyone?");
    var yes = button("danger delete-yes", "Delete it");
    var no = button("delete-no", "Keep it");
    confirmBox.append(yes, no);
    confirmBox.hidden = true;
    acts.append(ask);
    li.append(confirmBox);
    ask.addEventListener("click", function () {
      acts.hidden = true;
      confirmBox.hidden = false;
      yes.focus();
    });
    no.addEventListener("click", function () {
      acts.hidden = false;
      confirmBox.hidden = true;
    });
    yes.addEventListener("click", function () {
      yes.disabled = true;
      del(token).catch(function () {
        yes.disabled = false;
      });
    });
    return li;
  }

  function initMine() {
    var box = $("mine");
    if (!box || !storage()) {
      return;
    }
    var ul = $("mine-list");
    var status = $("mine-status");
    var say = function (msg) {
      status.textContent = msg;
      status.hidden = !msg;
    };
    var show = function () { box.hidden = ul.children.length === 0; };
    var labels = {};
    Array.prototype.forEach.call(document.querySelector("select[name=lang]").options, function (o) {
      labels[o.value] = o.textContent;
    });
    // gone drops paste id, which the server no longer has, from the page.
    var gone = function (id) {
      forget(id);
      var li = ul.querySelector("li[data-id=\"" + CSS.escape(id) + "\"]");
      if (li) {
        li.remove();
      }
      show();
    };

    // load shows the list and asks about each paste, CHECKS at a time.
    var load = function () {
      var now = Date.now();
      listed().forEach(function (e) {
        if (e.expires && e.expires <= now) {
          forget(e.id);
        }
      });
      var list = listed();
      ul.textContent = "";
      list.forEach(function (e) {
        ul.append(mineEntry(e, labels, now, async function (token) {
          say("");
          try {
            var res = await request(BASE + "/" + encodeURIComponent(e.id), { method: "DELETE", headers: { "X-Delete-Token": token } });
            if (res.status !== 204 && res.status !== 404) {
              throw new Error("Could not delete “" + (e.title || e.id) + "”: the server answered " + res.status + ".");
            }
          } catch (err) {
            say(err.message);
            throw err;
          }
          gone(e.id);
        }));
      });
      show();
      var check = async function () {
        for (var e = list.shift(); e; e = list.shift()) {
          var res = await request(BASE + "/api/v1/pastes/" + encodeURIComponent(e.id), { method: "HEAD", cache: "no-store" })
            .catch(function () { return null; });
          if (res && res.status === 404) {
            gone(e.id);
          }
        }
      };
      for (var i = 0; i < CHECKS; i++) {
        check();
      }
    };
    load();
    // Back from a paste just made, the browser may show this page as it
    // was left, without it.
    window.addEventListener("pageshow", function (ev) {
      if (ev.persisted) {
        load();
      }
    });

    var confirmClear = $("mine-clear-confirm");
    $("mine-clear").addEventListener("click", function () {
      confirmClear.hidden = false;
      $("mine-clear-yes").focus();
    });
    $("mine-clear-no").addEventListener("click", function () {
      confirmClear.hidden = true;
    });
    $("mine-clear-yes").addEventListener("click", function () {
      listed().forEach(function (e) { forget(e.id); });
      ul.textContent = "";
      confirmClear.hidden = true;
      show();
    });
  }

  // relTime says how far t is from now (both in milliseconds) as the
  // server's pages do (relTime in ui/format.go): the largest unit that
  // fits from 95% of its length, rounded.
  var timeUnits = [
    [365 * 24 * 3600e3, "year"], [30 * 24 * 3600e3, "month"], [7 * 24 * 3600e3, "week"],
    [24 * 3600e3, "day"], [3600e3, "hour"], [60e3, "minute"]
  ];
  function relTime(t, now) {
    var d = Math.abs(t - now), future = t > now;
    for (var i = 0; i < timeUnits.length; i++) {
      var unit = timeUnits[i];
      if (d < unit[0] * 0.95) {
        continue;
      }
      var n = Math.round(d / unit[0]);
      var text = n + " " + unit[1] + (n === 1 ? "" : "s");
      return future ? "in " + text : text + " ago";
    }
    return future ? "in less than a minute" : "just now";
  }

  // A mirror's pages carry fixed times, true however long they are
  // served; shown to a reader, they read as the live node's do.
  function initTimes() {
    document.querySelectorAll("time[data-relative]").forEach(function (el) {
      var t = Date.parse(el.getAttribute("datetime"));
      if (!isNaN(t)) {
        el.textContent = relTime(t, Date.now());
      }
    });
  }

  initTimes();
  initForm();
  initMine();
  initPaste();
  initLines();
  initBurn();
  initDelete();
})();
