// Package pn1 seals and opens the ciphertext text of encrypted pastes, the
// format that the web UI's script writes (ui/static/app.js):
//
//	pn1.k.<iv>.<ciphertext>                          random key
//	pn1.p.<iterations>.<salt>.<iv>.<ciphertext>      password
//
// Every binary field is base64url without padding. The cipher is AES-256-GCM
// with a 12-byte iv, the 16-byte tag appended to the ciphertext and no
// additional data. A random key is 32 bytes and travels only in the URL
// fragment; a password's key is PBKDF2-HMAC-SHA256(password, 16-byte salt,
// iterations, 32 bytes). The package uses the standard library only, so
// that pastectl can link it.
package pn1

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Iterations is the PBKDF2 iteration count of a password paste sealed
// here, the same as the browser's.
const Iterations = 600000

// MaxIterations bounds the work that a hostile paste can ask of Open; the
// browser refuses the same.
const MaxIterations = 100000000

// Errors of Open.
var (
	// ErrFormat means the text is not a pn1 paste.
	ErrFormat = errors.New("not an encrypted paste in the pn1 format")
	// ErrWrongKey means decryption failed: a wrong key or password, or a
	// paste that was changed.
	ErrWrongKey = errors.New("could not decrypt: wrong key or password")
	// ErrNeedPassword means a password paste was opened with a key, or the
	// other way round.
	ErrNeedPassword = errors.New("this paste is encrypted with a password")
	// ErrNeedKey means a random-key paste was opened with a password.
	ErrNeedKey = errors.New("this paste is encrypted with a key: give the URL with its #KEY")
)

var b64 = base64.RawURLEncoding

// SealKey encrypts plain under a new random key. It returns the ciphertext
// text and the key, base64url, for the URL fragment.
func SealKey(plain []byte) (text, key string, err error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", "", err
	}
	ct, iv, err := seal(raw, plain)
	if err != nil {
		return "", "", err
	}
	return "pn1.k." + b64.EncodeToString(iv) + "." + b64.EncodeToString(ct), b64.EncodeToString(raw), nil
}

// SealPassword encrypts plain under a key derived from password with
// Iterations rounds of PBKDF2 and a new random salt.
func SealPassword(plain []byte, password string) (string, error) {
	if password == "" {
		return "", errors.New("empty password")
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key, err := pbkdf2.Key(sha256.New, password, salt, Iterations, 32)
	if err != nil {
		return "", err
	}
	ct, iv, err := seal(key, plain)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("pn1.p.%d.%s.%s.%s", Iterations, b64.EncodeToString(salt),
		b64.EncodeToString(iv), b64.EncodeToString(ct)), nil
}

func seal(key, plain []byte) (ct, iv []byte, err error) {
	gcm, err := newGCM(key)
	if err != nil {
		return nil, nil, err
	}
	iv = make([]byte, gcm.NonceSize())
	if _, err := rand.Read(iv); err != nil {
		return nil, nil, err
	}
	return gcm.Seal(nil, iv, plain, nil), iv, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Box is a parsed pn1 paste.
type Box struct {
	Password   bool // sealed with a password, not a random key
	Iterations int
	Salt, IV   []byte
	Data       []byte // ciphertext and tag
}

// Parse reads the ciphertext text of a paste; surrounding white space is
// ignored.
func Parse(text string) (*Box, error) {
	f := strings.Split(strings.TrimSpace(text), ".")
	var b Box
	var err error
	switch {
	case len(f) == 4 && f[0] == "pn1" && f[1] == "k":
		b.IV, b.Data, err = decode2(f[2], f[3])
	case len(f) == 6 && f[0] == "pn1" && f[1] == "p":
		b.Password = true
		b.Iterations, err = strconv.Atoi(f[2])
		if err != nil || len(f[2]) > 9 || b.Iterations < 1 || b.Iterations > MaxIterations {
			return nil, ErrFormat
		}
		if b.Salt, err = b64.DecodeString(f[3]); err == nil {
			b.IV, b.Data, err = decode2(f[4], f[5])
		}
	default:
		return nil, ErrFormat
	}
	if err != nil || len(b.IV) != 12 {
		return nil, ErrFormat
	}
	return &b, nil
}

func decode2(a, b string) ([]byte, []byte, error) {
	x, err := b64.DecodeString(a)
	if err != nil {
		return nil, nil, err
	}
	y, err := b64.DecodeString(b)
	return x, y, err
}

// OpenKey decrypts a random-key paste with the key from its URL fragment.
func OpenKey(text, key string) ([]byte, error) {
	b, err := Parse(text)
	if err != nil {
		return nil, err
	}
	if b.Password {
		return nil, ErrNeedPassword
	}
	raw, err := b64.DecodeString(strings.TrimSpace(key))
	if err != nil || len(raw) != 32 {
		return nil, ErrWrongKey
	}
	return open(raw, b)
}

// OpenPassword decrypts a password paste.
func OpenPassword(text, password string) ([]byte, error) {
	b, err := Parse(text)
	if err != nil {
		return nil, err
	}
	if !b.Password {
		return nil, ErrNeedKey
	}
	key, err := pbkdf2.Key(sha256.New, password, b.Salt, b.Iterations, 32)
	if err != nil {
		return nil, err
	}
	return open(key, b)
}

func open(key []byte, b *Box) ([]byte, error) {
	gcm, err := newGCM(key)
	if err != nil {
		return nil, ErrWrongKey
	}
	plain, err := gcm.Open(nil, b.IV, b.Data, nil)
	if err != nil {
		return nil, ErrWrongKey
	}
	// The browser decodes the plaintext as strict UTF-8; so does this, so
	// that both sides agree on what a paste is.
	if !utf8.Valid(plain) {
		return nil, errors.New("decrypted paste is not UTF-8 text")
	}
	return plain, nil
}
