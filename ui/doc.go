// Package ui renders pastenode's web pages: the new-paste form, the paste
// view, the burn-after-reading notice and the error page. The templates,
// the one stylesheet and the one script are embedded in the binary, so a
// node serves its UI without any outside asset. The package writes HTML to
// an io.Writer and serves its static files. It also builds what the live
// node (package api) and the static mirror (package mirror) both show of a
// paste besides its page, so that the two show alike: the metadata
// document and the headers of a page (CSP included). The HTTP plumbing
// they share is package httpx; routing and status codes stay with them.
//
// Plain pastes are highlighted on the server with chroma, using CSS classes
// only: the page never carries a style attribute, an inline script or an
// inline style sheet, so it works under the policy that CSP returns.
// Markdown pastes are rendered with goldmark too (markdown.go); both run
// under one time budget (budget.go).
//
// With Options.BasePath every link, form action, asset and script fetch
// of the pages starts with that prefix (the layout hands it to the script
// as the body's data-base attribute).
//
// # Deleting from the browser
//
// The script sends the form as JSON and keeps the delete token of the new
// paste in localStorage, under the paste's id, and nowhere else: never in
// a URL (a server log or a Referer would see it) and never in a cookie.
// A paste's page, or a burn paste's notice, shows #delete when this browser
// holds its token; #delete-confirm asks, then the script sends DELETE with
// X-Delete-Token and marks the body data-deleted. A form posted without
// the script gets the token only in a response header, which the page
// cannot read, so such a paste shows no delete control.
//
// The script also keeps a record of each paste it makes, and the front
// page lists them (#mine) from localStorage alone; it asks the server
// about each paste on its own, with HEAD /api/v1/pastes/ID, and drops the
// ones that are gone.
//
// # Encrypted pastes
//
// Encryption happens in the browser (static/app.js); the server stores and
// serves only the ciphertext text, and never sees the key, the password or
// the plaintext. The ciphertext text is ASCII, with fields separated by
// dots, and comes in two forms:
//
//	pn1.k.<iv>.<ciphertext>                          random key
//	pn1.p.<iterations>.<salt>.<iv>.<ciphertext>      password
//
// Every binary field is base64url without padding (RFC 4648 section 5).
// The cipher is AES-256-GCM with a 12-byte iv, a 128-bit tag appended to
// the ciphertext (as WebCrypto and Python's AESGCM produce it) and no
// additional data. The plaintext is UTF-8 text.
//
// With a random key, the key is 32 random bytes, base64url without padding,
// and travels only in the URL fragment: https://host/ID#KEY. With a
// password, the key is PBKDF2-HMAC-SHA256(UTF-8 password, salt, iterations,
// 32 bytes), with a 16-byte random salt and at least 600000 iterations; the
// link carries no key.
//
// The page also decrypts, but never makes, the old Rust pastebin's
// encrypted pastes, which its page wrote with CryptoJS.AES.encrypt(text,
// passphrase): base64 of "Salted__", an 8-byte salt and AES-256-CBC
// ciphertext, with the key and iv from OpenSSL's EVP_BytesToKey (MD5, one
// round). It asks for the passphrase as for a pn1.p paste. In a shell:
//
//	curl -s https://host/raw/ID | openssl enc -d -aes-256-cbc -md md5 -a -A -k PASSPHRASE
//
// (a ciphertext wrapped over several lines needs -a without -A).
//
// To decrypt pn1 in a shell, fetch /raw/ID and run Python with the
// cryptography package (openssl enc cannot do GCM):
//
//	curl -s https://host/raw/ID > paste.pn1
//	python3 - paste.pn1 KEY_OR_PASSWORD <<'EOF'
//	import base64, hashlib, sys
//	from cryptography.hazmat.primitives.ciphers.aead import AESGCM
//	def b64u(s): return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
//	f = open(sys.argv[1]).read().strip().split(".")
//	if f[1] == "k":
//	    key, iv, ct = b64u(sys.argv[2]), b64u(f[2]), b64u(f[3])
//	else:
//	    salt, iv, ct = b64u(f[3]), b64u(f[4]), b64u(f[5])
//	    key = hashlib.pbkdf2_hmac("sha256", sys.argv[2].encode(), salt, int(f[2]), 32)
//	sys.stdout.write(AESGCM(key).decrypt(iv, ct, None).decode())
//	EOF
package ui
