package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/pastenode/pastenode/pn1"
)

// askPassword is the value of a --password flag given without one: the
// password is then read from the terminal, without echo.
const askPassword = "-"

// secret is how put encrypts and get decrypts: a password, or (for put)
// a new random key.
type secret struct {
	encrypt  bool   // put --encrypt
	password string // --password=VALUE, askPassword, or PASTE_PASSWORD
	fromEnv  bool   // password came from PASTE_PASSWORD, not the flag
}

// resolve fills the password from PASTE_PASSWORD when the flag was not
// given, and asks the terminal for it when the flag was given bare.
func (s *secret) resolve(flagGiven bool, confirm bool) error {
	if !flagGiven {
		s.password = os.Getenv("PASTE_PASSWORD")
		s.fromEnv = s.password != ""
		return nil
	}
	if s.password != askPassword {
		if s.password == "" {
			return usagef("--password is empty")
		}
		return nil
	}
	p, err := readPassword("Password: ")
	if err != nil {
		return err
	}
	if confirm {
		again, err := readPassword("Password again: ")
		if err != nil {
			return err
		}
		if again != p {
			return errors.New("the passwords do not match")
		}
	}
	if p == "" {
		return errors.New("empty password")
	}
	s.password = p
	return nil
}

// readPassword prompts on the terminal (not stdin, which may hold the
// paste) and reads a line without echo.
func readPassword(prompt string) (string, error) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return "", errors.New("no terminal to ask for the password: use --password=VALUE or PASTE_PASSWORD")
	}
	defer tty.Close()
	fmt.Fprint(tty, prompt)
	b, err := term.ReadPassword(int(tty.Fd()))
	fmt.Fprintln(tty)
	if err != nil {
		return "", fmt.Errorf("read password: %w", err)
	}
	return string(b), nil
}

// seal encrypts content in the browser's format. It returns the text to
// upload and the key for the URL fragment ("" with a password).
func (s *secret) seal(content io.Reader) (text, key string, err error) {
	plain, err := io.ReadAll(content)
	if err != nil {
		return "", "", fmt.Errorf("read content: %w", err)
	}
	if !utf8.Valid(plain) {
		return "", "", errors.New("only UTF-8 text can be encrypted: the browser shows the paste as text")
	}
	if s.password != "" {
		text, err = pn1.SealPassword(plain, s.password)
		return text, "", err
	}
	return pn1.SealKey(plain)
}

// open decrypts a paste's text with the password, or when it is empty
// with the key from its URL's fragment.
func open(text, key, password string) ([]byte, error) {
	var plain []byte
	var err error
	if password != "" {
		plain, err = pn1.OpenPassword(text, password)
	} else {
		plain, err = pn1.OpenKey(text, key)
	}
	switch {
	case errors.Is(err, pn1.ErrNeedPassword):
		return nil, errors.New("this paste is encrypted with a password: use --password")
	case errors.Is(err, pn1.ErrFormat):
		return nil, errors.New("the paste is not encrypted (not in the pn1 format), so it cannot be decrypted")
	}
	return plain, err
}

// fragment returns the part of an id or URL after "#": a paste's key.
func fragment(idOrURL string) string {
	_, key, _ := strings.Cut(idOrURL, "#")
	return key
}
