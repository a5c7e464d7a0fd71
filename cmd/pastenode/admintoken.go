package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// adminTokenFile is the file in the data dir that holds a generated admin
// token; `pastectl --data-dir DIR` reads it.
const adminTokenFile = "admin-token"

// loadAdminToken returns the admin token of a node started without
// --admin-token: the one in DATA_DIR/admin-token, generated on the first
// start. The file is written whole to a temporary name and linked into
// place, so that a crash or a second process never leaves a partial or a
// second token; it is 0600 as the token is the key to every admin call.
func loadAdminToken(dataDir string) (token, path string, err error) {
	path = filepath.Join(dataDir, adminTokenFile)
	if token, err := readAdminToken(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return token, path, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", path, fmt.Errorf("admin token: %w", err)
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", path, fmt.Errorf("admin token: %w", err)
	}
	token = base64.RawURLEncoding.EncodeToString(b[:])
	tmp, err := os.CreateTemp(dataDir, adminTokenFile+".tmp-*")
	if err != nil {
		return "", path, fmt.Errorf("admin token: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(token + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", path, fmt.Errorf("admin token: write %s: %w", tmp.Name(), err)
	}
	// CreateTemp makes the file 0600. Link fails if another start won the
	// race; then its token is the one.
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", path, fmt.Errorf("admin token: %w", err)
	}
	token, err = readAdminToken(path)
	return token, path, err
}

// readAdminToken reads a token file, refusing one that others may read.
func readAdminToken(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("admin token file %s is readable by others (mode %s): chmod 600 it", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("admin token file %s is empty: delete it to have a new token made", path)
	}
	return token, nil
}
