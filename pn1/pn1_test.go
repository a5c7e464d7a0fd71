package pn1

import (
	"errors"
	"strings"
	"testing"
)

// The vectors were made independently of this package, with Python's
// hashlib.pbkdf2_hmac and cryptography's AESGCM: key bytes 0..31, iv bytes
// 100..111, salt bytes 200..215.
const (
	vectorPlain    = "héllo, pn1\nline 2\n"
	vectorKeyText  = "pn1.k.ZGVmZ2hpamtsbW5v.INh3ChWGer5ODG7itgwEmGLwDC_kicLeW3nhVywRGpvpFPY"
	vectorKey      = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
	vectorPassText = "pn1.p.600000.yMnKy8zNzs_Q0dLT1NXW1w.ZGVmZ2hpamtsbW5v.fdSVlU_RnA6JDvudlERzFh5xJ1cK_VTpGbt-QawCg8jhMQI"
	vectorPassword = "correct horse"
)

func TestOpenVectors(t *testing.T) {
	got, err := OpenKey(vectorKeyText+"\n", vectorKey)
	if err != nil || string(got) != vectorPlain {
		t.Fatalf("OpenKey = %q, %v; want %q", got, err, vectorPlain)
	}
	got, err = OpenPassword(vectorPassText, vectorPassword)
	if err != nil || string(got) != vectorPlain {
		t.Fatalf("OpenPassword = %q, %v; want %q", got, err, vectorPlain)
	}
}

func TestRoundTrip(t *testing.T) {
	text, key, err := SealKey([]byte(vectorPlain))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, "pn1.k.") || len(key) != 43 || strings.Contains(text, key) {
		t.Fatalf("SealKey = %q, key %q", text, key)
	}
	if got, err := OpenKey(text, key); err != nil || string(got) != vectorPlain {
		t.Fatalf("OpenKey(SealKey) = %q, %v", got, err)
	}
	text, err = SealPassword([]byte(vectorPlain), vectorPassword)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, "pn1.p.600000.") || strings.Contains(text, vectorPassword) {
		t.Fatalf("SealPassword = %q", text)
	}
	if got, err := OpenPassword(text, vectorPassword); err != nil || string(got) != vectorPlain {
		t.Fatalf("OpenPassword(SealPassword) = %q, %v", got, err)
	}
}

func TestOpenErrors(t *testing.T) {
	tampered := vectorKeyText[:len(vectorKeyText)-2] + "AA"
	otherKey := "AQECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
	tests := []struct {
		name string
		open func() ([]byte, error)
		want error
	}{
		{"wrong key", func() ([]byte, error) { return OpenKey(vectorKeyText, otherKey) }, ErrWrongKey},
		{"short key", func() ([]byte, error) { return OpenKey(vectorKeyText, "abc") }, ErrWrongKey},
		{"tampered", func() ([]byte, error) { return OpenKey(tampered, vectorKey) }, ErrWrongKey},
		{"wrong password", func() ([]byte, error) { return OpenPassword(vectorPassText, "wrong") }, ErrWrongKey},
		{"key for a password paste", func() ([]byte, error) { return OpenKey(vectorPassText, vectorKey) }, ErrNeedPassword},
		{"password for a key paste", func() ([]byte, error) { return OpenPassword(vectorKeyText, "x") }, ErrNeedKey},
		{"plain text", func() ([]byte, error) { return OpenKey("hello", vectorKey) }, ErrFormat},
		{"bad base64", func() ([]byte, error) { return OpenKey("pn1.k.!!.AA", vectorKey) }, ErrFormat},
		{"absurd iterations", func() ([]byte, error) {
			return OpenPassword("pn1.p.999999999.AA.ZGVmZ2hpamtsbW5v.AA", "x")
		}, ErrFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.open()
			if !errors.Is(err, tt.want) || got != nil {
				t.Errorf("got %q, %v; want %v", got, err, tt.want)
			}
		})
	}
}
