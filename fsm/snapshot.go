package fsm

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/raft"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/vmihailenco/msgpack/v5"
)

// The snapshot format: the magic bytes and a version byte, then a
// compressed stream of msgpack values: a snapshotHeader, then Pastes
// pastes, Tombs tombRecords and Removed removedRecords. Tombstones are
// written without the content of a consumed burn paste.
//
// Version 2 compresses with zstd, with the frame's content checksum
// (XXH64) on; version 1 with gzip (CRC-32). A node restores its newest
// snapshot at every start, and zstd decodes it several times faster than
// gzip at the same size. Version 1 is still read, and written while a
// member of protocol 1 may receive the snapshot.
const (
	snapshotMagic   = "PNSNAP"
	snapshotGzip    = 1
	snapshotZstd    = 2
	snapshotVersion = snapshotZstd
)

// ErrSnapshot means a snapshot could not be read.
var ErrSnapshot = errors.New("bad snapshot")

type snapshotHeader struct {
	Version int    `msgpack:"v"`
	Index   uint64 `msgpack:"i"`
	Clock   int64  `msgpack:"c"`
	Pastes  int    `msgpack:"p"`
	Tombs   int    `msgpack:"t"`
	Removed int    `msgpack:"r"`
}

type tombRecord struct {
	ID   string     `msgpack:"id"`
	Tomb *Tombstone `msgpack:"t"`
}

type removedRecord struct {
	ID string `msgpack:"id"`
	At int64  `msgpack:"at"`
}

type snapshot struct {
	s       *state
	version byte // snapshotGzip or snapshotZstd
}

// Persist streams the captured state to sink. It runs while applies go on.
func (sn *snapshot) Persist(sink raft.SnapshotSink) error {
	if err := sn.write(sink); err != nil {
		sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return sink.Close()
}

// Release is a no-op: the captured state is garbage collected.
func (sn *snapshot) Release() {}

func (sn *snapshot) write(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	if _, err := bw.WriteString(snapshotMagic); err != nil {
		return err
	}
	if err := bw.WriteByte(sn.version); err != nil {
		return err
	}
	zw, err := compressor(bw, sn.version)
	if err != nil {
		return err
	}
	defer zw.Close()
	enc := msgpack.NewEncoder(zw)
	s := sn.s
	hdr := snapshotHeader{
		Version: int(sn.version),
		Index:   s.index,
		Clock:   s.clock,
		Pastes:  s.pastes.len(),
		Tombs:   s.tombs.len(),
		Removed: s.removed.len(),
	}
	if err := enc.Encode(&hdr); err != nil {
		return err
	}
	if err := walk(s.pastes, func(_ string, p *Paste) error { return enc.Encode(p) }); err != nil {
		return err
	}
	// A consumed burn paste's content lives in memory for its grace
	// only: it is never written to disk.
	if err := walk(s.tombs, func(id string, t *Tombstone) error {
		return enc.Encode(&tombRecord{ID: id, Tomb: t.withoutPaste()})
	}); err != nil {
		return err
	}
	if err := walk(s.removed, func(id string, at int64) error {
		return enc.Encode(&removedRecord{ID: id, At: at})
	}); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// compressor returns the compressing writer of snapshot version v.
func compressor(w io.Writer, v byte) (io.WriteCloser, error) {
	if v == snapshotGzip {
		return gzip.NewWriterLevel(w, gzip.BestSpeed)
	}
	return zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(true))
}

// walk calls fn for every entry of t in id order until fn fails.
func walk[V any](t idTree[V], fn func(id string, v V) error) error {
	var err error
	t.ascend(func(id string, v V) bool {
		err = fn(id, v)
		return err == nil
	})
	return err
}

// readSnapshot decodes a snapshot into a fresh state.
func readSnapshot(r io.Reader) (*state, error) {
	zr, err := openSnapshot(bufio.NewReaderSize(r, 256<<10))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	s, err := decodeState(msgpack.NewDecoder(zr))
	if err != nil {
		return nil, err
	}
	// Read to the end so that the decompressor verifies its checksum.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	return s, nil
}

// openSnapshot checks the magic bytes and returns the decompressed stream
// that follows them, for either version.
func openSnapshot(br *bufio.Reader) (io.ReadCloser, error) {
	magic := make([]byte, len(snapshotMagic)+1)
	if _, err := io.ReadFull(br, magic); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrSnapshot, err)
	}
	if string(magic[:len(snapshotMagic)]) != snapshotMagic {
		return nil, fmt.Errorf("%w: not a pastenode snapshot", ErrSnapshot)
	}
	var zr io.ReadCloser
	var err error
	switch v := magic[len(snapshotMagic)]; v {
	case snapshotGzip:
		zr, err = gzip.NewReader(br)
	case snapshotZstd:
		var d *zstd.Decoder
		d, err = zstd.NewReader(br)
		if err == nil {
			zr = d.IOReadCloser()
		}
	default:
		return nil, fmt.Errorf("%w: version %d, want %d or %d", ErrSnapshot, v, snapshotGzip, snapshotZstd)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	return zr, nil
}

// decodeState decodes the header and the records that follow it. The
// pastes, nearly all of a snapshot, are decoded and sealed on one core
// while this goroutine inserts them, which it must do alone.
func decodeState(dec *msgpack.Decoder) (*state, error) {
	var hdr snapshotHeader
	if err := dec.Decode(&hdr); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrSnapshot, err)
	}
	if hdr.Pastes < 0 || hdr.Tombs < 0 || hdr.Removed < 0 {
		return nil, fmt.Errorf("%w: negative counts", ErrSnapshot)
	}

	tx := newTxn(emptyState())
	tx.index, tx.clock = hdr.Index, hdr.Clock
	// What the snapshot removed is unknown: count all of it as removals.
	tx.removal = hdr.Index
	batches := make(chan []*Paste, 4)
	errc := make(chan error, 1)
	go func() { errc <- decodePastes(dec, hdr.Pastes, batches) }()
	for batch := range batches {
		for _, p := range batch {
			tx.put(p)
		}
	}
	if err := <-errc; err != nil {
		return nil, err
	}
	for i := 0; i < hdr.Tombs; i++ {
		var r tombRecord
		if err := dec.Decode(&r); err != nil || r.Tomb == nil {
			return nil, fmt.Errorf("%w: tombstone %d: %v", ErrSnapshot, i, err)
		}
		tx.addTomb(r.ID, r.Tomb)
	}
	for i := 0; i < hdr.Removed; i++ {
		var r removedRecord
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("%w: removed node %d: %v", ErrSnapshot, i, err)
		}
		tx.removed.set(r.ID, r.At)
	}
	return tx.commit(), nil
}

// restoreBatch is how many decoded pastes decodePastes hands over at once.
const restoreBatch = 256

// decodePastes decodes n pastes, seals them and sends them to out in
// batches; it closes out when it is done or fails.
func decodePastes(dec *msgpack.Decoder, n int, out chan<- []*Paste) error {
	defer close(out)
	batch := make([]*Paste, 0, restoreBatch)
	for i := 0; i < n; i++ {
		p := new(Paste)
		if err := dec.Decode(p); err != nil {
			return fmt.Errorf("%w: paste %d: %v", ErrSnapshot, i, err)
		}
		if p.ID == "" {
			return fmt.Errorf("%w: paste %d has no id", ErrSnapshot, i)
		}
		p.Seal()
		if batch = append(batch, p); len(batch) == restoreBatch {
			out <- batch
			batch = make([]*Paste, 0, restoreBatch)
		}
	}
	if len(batch) > 0 {
		out <- batch
	}
	return nil
}
