#!/bin/sh
# Makes the vectors of TestOldPastebinEncryptedOpens: the old Rust
# pastebin's encrypted pastes, which its page wrote with
# CryptoJS.AES.encrypt(text, passphrase), in OpenSSL's "Salted__" format.
# NAME.txt is the plaintext, NAME.pass the passphrase (no newline) and
# NAME.enc what openssl enc wrote: base64 wrapped at 64 characters, or on
# one line with -A, as CryptoJS writes it. The salt is random, so every
# run makes other ciphertexts of the same plaintexts.
# long.txt is 96 bytes, whole AES blocks, so its padding is a block of its own.
set -eu
cd "$(dirname "$0")"
for name in ascii long; do
	openssl enc -aes-256-cbc -md md5 -a -salt -pass "file:$name.pass" -in "$name.txt" -out "$name.enc"
done
openssl enc -aes-256-cbc -md md5 -a -A -salt -pass file:unicode.pass -in unicode.txt -out unicode.enc
