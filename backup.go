package pastenode

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
)

// The backup file format (GET /api/v1/backup, pastectl backup, pastenode
// restore): BackupMagic, one byte of format version, the body (the node's
// snapshot of its whole state), then a trailer: backupEnd, the body length
// as 8 bytes big-endian, and the SHA-256 of everything before the trailer.
// A file cut short loses its trailer, so truncation is always detected.
const (
	BackupMagic   = "PNBACKUP"
	BackupVersion = 1

	backupEnd        = "PNEND"
	backupHeaderLen  = len(BackupMagic) + 1
	backupTrailerLen = len(backupEnd) + 8 + sha256.Size
)

// Errors of a backup file.
var (
	// ErrBackupVersion means the backup was written in a format newer than
	// this binary knows.
	ErrBackupVersion = errors.New("backup format is newer than this binary knows")
	// ErrBackupCorrupt means the backup is truncated, corrupt or not a
	// backup at all.
	ErrBackupCorrupt = errors.New("backup is corrupt or truncated")
)

// BackupWriter writes a backup file around a body: the header with the
// first bytes of the body, the trailer on Close. Until the first Write,
// nothing has reached the underlying writer, so a server can still answer
// with an error instead.
type BackupWriter struct {
	w       io.Writer
	sum     hash.Hash
	started bool
	body    int64
	err     error
}

// NewBackupWriter returns a writer of a backup to w.
func NewBackupWriter(w io.Writer) *BackupWriter {
	return &BackupWriter{w: w, sum: sha256.New()}
}

func (bw *BackupWriter) start() error {
	if bw.started || bw.err != nil {
		return bw.err
	}
	bw.started = true
	hdr := append([]byte(BackupMagic), BackupVersion)
	bw.sum.Write(hdr)
	if _, err := bw.w.Write(hdr); err != nil {
		bw.err = fmt.Errorf("write backup header: %w", err)
	}
	return bw.err
}

// Write adds p to the body.
func (bw *BackupWriter) Write(p []byte) (int, error) {
	if err := bw.start(); err != nil {
		return 0, err
	}
	n, err := bw.w.Write(p)
	bw.sum.Write(p[:n])
	bw.body += int64(n)
	bw.err = err
	return n, err
}

// Close writes the trailer. It does not close the underlying writer.
func (bw *BackupWriter) Close() error {
	if err := bw.start(); err != nil {
		return err
	}
	tr := make([]byte, 0, backupTrailerLen)
	tr = append(tr, backupEnd...)
	tr = binary.BigEndian.AppendUint64(tr, uint64(bw.body))
	tr = bw.sum.Sum(tr)
	if _, err := bw.w.Write(tr); err != nil {
		return fmt.Errorf("write backup trailer: %w", err)
	}
	return nil
}

// BackupInfo locates the body of a verified backup file.
type BackupInfo struct {
	Version    int
	BodyOffset int64
	BodyLen    int64
}

// VerifyBackup checks a whole backup file of size bytes: its magic, its
// version, its length and its checksum. It returns ErrBackupVersion for a
// newer format and ErrBackupCorrupt for anything else wrong. It checks the
// container only; the body is the server's to decode.
func VerifyBackup(r io.ReaderAt, size int64) (BackupInfo, error) {
	hdr := make([]byte, backupHeaderLen)
	if _, err := r.ReadAt(hdr, 0); err != nil {
		return BackupInfo{}, fmt.Errorf("%w: no header: %v", ErrBackupCorrupt, err)
	}
	if string(hdr[:len(BackupMagic)]) != BackupMagic {
		return BackupInfo{}, fmt.Errorf("%w: not a pastenode backup", ErrBackupCorrupt)
	}
	if v := int(hdr[len(BackupMagic)]); v > BackupVersion {
		return BackupInfo{}, fmt.Errorf("%w: the file is format version %d, this binary knows up to %d: use a newer pastenode",
			ErrBackupVersion, v, BackupVersion)
	} else if v < 1 {
		return BackupInfo{}, fmt.Errorf("%w: format version %d", ErrBackupCorrupt, v)
	}
	bodyLen := size - int64(backupHeaderLen) - int64(backupTrailerLen)
	if bodyLen < 0 {
		return BackupInfo{}, fmt.Errorf("%w: only %d bytes", ErrBackupCorrupt, size)
	}
	tr := make([]byte, backupTrailerLen)
	if _, err := r.ReadAt(tr, size-int64(backupTrailerLen)); err != nil {
		return BackupInfo{}, fmt.Errorf("%w: no trailer: %v", ErrBackupCorrupt, err)
	}
	if string(tr[:len(backupEnd)]) != backupEnd ||
		binary.BigEndian.Uint64(tr[len(backupEnd):]) != uint64(bodyLen) {
		return BackupInfo{}, fmt.Errorf("%w: the end is missing (the file is cut short)", ErrBackupCorrupt)
	}
	sum := sha256.New()
	if _, err := io.Copy(sum, io.NewSectionReader(r, 0, size-int64(backupTrailerLen))); err != nil {
		return BackupInfo{}, fmt.Errorf("%w: read: %v", ErrBackupCorrupt, err)
	}
	if string(sum.Sum(nil)) != string(tr[len(backupEnd)+8:]) {
		return BackupInfo{}, fmt.Errorf("%w: checksum mismatch", ErrBackupCorrupt)
	}
	return BackupInfo{Version: int(hdr[len(BackupMagic)]), BodyOffset: int64(backupHeaderLen), BodyLen: bodyLen}, nil
}
