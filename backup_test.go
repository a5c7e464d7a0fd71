package pastenode_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/pastenode/pastenode"
)

func TestVerifyBackup(t *testing.T) {
	var buf bytes.Buffer
	bw := pastenode.NewBackupWriter(&buf)
	body := []byte("the whole state")
	bw.Write(body)
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	info, err := pastenode.VerifyBackup(bytes.NewReader(good), int64(len(good)))
	if err != nil {
		t.Fatal(err)
	}
	if got := good[info.BodyOffset : info.BodyOffset+info.BodyLen]; !bytes.Equal(got, body) || info.Version != pastenode.BackupVersion {
		t.Errorf("info %+v locates %q, want version %d and %q", info, got, pastenode.BackupVersion, body)
	}

	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 1
		return b
	}
	newer := bytes.Clone(good)
	newer[len(pastenode.BackupMagic)] = pastenode.BackupVersion + 1
	for name, tc := range map[string]struct {
		file []byte
		want error
	}{
		"newer version":   {newer, pastenode.ErrBackupVersion},
		"a body bit":      {flip(len(pastenode.BackupMagic) + 3), pastenode.ErrBackupCorrupt},
		"a checksum bit":  {flip(len(good) - 1), pastenode.ErrBackupCorrupt},
		"cut by one byte": {good[:len(good)-1], pastenode.ErrBackupCorrupt},
		"extra bytes":     {append(bytes.Clone(good), 0), pastenode.ErrBackupCorrupt},
		"not a backup":    {[]byte("PNSNAP\x01 something else entirely, long enough for a trailer......"), pastenode.ErrBackupCorrupt},
		"empty":           {nil, pastenode.ErrBackupCorrupt},
	} {
		if _, err := pastenode.VerifyBackup(bytes.NewReader(tc.file), int64(len(tc.file))); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", name, err, tc.want)
		}
	}
}
