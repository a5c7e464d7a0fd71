package fsm

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/hashicorp/raft"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/vmihailenco/msgpack/v5"
)

// The snapshot formats start with the magic bytes and a version byte.
//
// Versions 4 and 5 refer to segments (manifest.go): what a node writes
// once every member reads them (protocol 5).
//
// Versions 1 to 3 are a compressed stream of msgpack values: a
// snapshotHeader, then Pastes pastes, Tombs tombRecords and Removed
// removedRecords, tombstones without the content of a consumed burn
// paste. Version 2 is an S2 stream (framed blocks, each with its CRC-32C)
// with each paste a msgpack array of its fields (encodePasteRecord), and
// is written while a member of protocol 2 to 4 may receive the snapshot;
// version 1 is gzip (CRC-32) of pastes encoded as in the log, written
// for protocol 1. Version 3, the records the store kept in memory before
// segments (readV3Record), is only read: a data dir of that version
// moves in through it.
const (
	snapshotMagic    = "PNSNAP"
	snapshotGzip     = 1
	snapshotS2       = 2
	snapshotRecords  = 3
	snapshotSegments = 4
	snapshotLocal    = 5
)

// ErrSnapshot means a snapshot could not be read.
var ErrSnapshot = errors.New("bad snapshot")

type snapshotHeader struct {
	Version int    `msgpack:"v"`
	Index   uint64 `msgpack:"i"`
	Clock   int64  `msgpack:"c"`
	Pastes  int    `msgpack:"p"`
	Bytes   int64  `msgpack:"b,omitempty"` // the pastes' content, from version 4 on
	Tombs   int    `msgpack:"t"`
	Removed int    `msgpack:"r"`
	// Cluster and Admin are the cluster's identity and admin token hash.
	// Versions older than protocol 4 skip the fields they do not know.
	Cluster string `msgpack:"cl,omitempty"`
	Admin   []byte `msgpack:"ah,omitempty"`
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
	version byte // snapshotGzip, snapshotS2 or snapshotSegments
	done    func()
	once    sync.Once
}

// Persist writes the captured state to sink. It runs while applies go on.
// A sink that names its directory (the node's snapshot store) gets the
// manifest, with the segments linked beside it.
func (sn *snapshot) Persist(sink raft.SnapshotSink) error {
	defer sn.Release()
	dir := ""
	if d, ok := sink.(interface{ Dir() string }); ok && sn.version == snapshotSegments && sn.s.arena.segs.dir != "" {
		dir = d.Dir()
	}
	if err := sn.writeTo(sink, dir); err != nil {
		sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return sink.Close()
}

// Release lets the FSM remove segment files again.
func (sn *snapshot) Release() { sn.once.Do(sn.done) }

func (sn *snapshot) writeTo(w io.Writer, dir string) error {
	if sn.version == snapshotSegments {
		return sn.writeSegmented(w, dir)
	}
	return sn.writeLegacy(w)
}

// writeLegacy writes a snapshot of version 1 or 2.
func (sn *snapshot) writeLegacy(w io.Writer) error {
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
	// The records are written a few bytes at a time: buffered, the
	// compressor sees whole blocks rather than a call per field.
	rw := bufio.NewWriterSize(zw, 64<<10)
	enc := msgpack.NewEncoder(rw)
	s := sn.s
	hdr := snapshotHeader{
		Version: int(sn.version),
		Index:   s.index,
		Clock:   s.clock,
		Pastes:  s.pastes.len(),
		Tombs:   s.tombs.len(),
		Removed: s.removed.len(),
		Cluster: s.cluster,
		Admin:   s.admin,
	}
	if err := enc.Encode(&hdr); err != nil {
		return err
	}
	if err := walk(s.pastes, func(_ string, it pasteItem) error {
		p, err := it.r.paste()
		if err != nil {
			return err
		}
		return sn.encodePaste(enc, p)
	}); err != nil {
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
	if err := rw.Flush(); err != nil {
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
	return s2.NewWriter(w), nil
}

// encodePaste writes p as the snapshot's version encodes a paste.
func (sn *snapshot) encodePaste(enc *msgpack.Encoder, p *Paste) error {
	if sn.version == snapshotGzip {
		return enc.Encode(p)
	}
	return encodePasteRecord(enc, p)
}

// walk calls fn for every entry of t in id order until fn fails.
func walk[V any](t interface {
	ascend(func(id string, v V) bool)
}, fn func(id string, v V) error) error {
	var err error
	t.ascend(func(id string, v V) bool {
		err = fn(id, v)
		return err == nil
	})
	return err
}

// readSnapshot decodes a snapshot into a fresh state whose pastes it
// writes into new segments of segs. On failure it removes those.
func readSnapshot(r io.Reader, segs *segments) (*state, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	if head, err := br.Peek(len(snapshotMagic) + 1); err == nil && string(head[:len(snapshotMagic)]) == snapshotMagic {
		switch head[len(snapshotMagic)] {
		case snapshotSegments:
			br.Discard(len(head))
			return readSegmentedStream(br, newArena(segs))
		case snapshotLocal:
			return nil, fmt.Errorf("%w: a snapshot of linked segments is read from its directory", ErrSnapshot)
		}
	}
	zr, version, err := openSnapshot(br)
	if err != nil {
		return nil, err
	}
	a := newArena(segs)
	s, err := decodeState(msgpack.NewDecoder(zr), version, a)
	if err == nil {
		err = a.seal()
	}
	if err != nil {
		for _, sg := range a.all {
			segs.remove(sg)
		}
		return nil, err
	}
	// Read to the end so that the decompressor verifies its checksum.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	return s, nil
}

// openSnapshot checks the magic bytes and returns the decompressed stream
// that follows them and the snapshot's version.
func openSnapshot(br *bufio.Reader) (io.Reader, byte, error) {
	magic := make([]byte, len(snapshotMagic)+1)
	if _, err := io.ReadFull(br, magic); err != nil {
		return nil, 0, fmt.Errorf("%w: header: %v", ErrSnapshot, err)
	}
	if string(magic[:len(snapshotMagic)]) != snapshotMagic {
		return nil, 0, fmt.Errorf("%w: not a pastenode snapshot", ErrSnapshot)
	}
	switch v := magic[len(snapshotMagic)]; v {
	case snapshotGzip:
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %v", ErrSnapshot, err)
		}
		return zr, v, nil
	case snapshotS2, snapshotRecords:
		return s2.NewReader(br), v, nil
	default:
		return nil, 0, fmt.Errorf("%w: version %d, want %d to %d", ErrSnapshot, v, snapshotGzip, snapshotLocal)
	}
}

// decodeState decodes the header and the records that follow it.
func decodeState(dec *msgpack.Decoder, version byte, a *arena) (*state, error) {
	var hdr snapshotHeader
	if err := dec.Decode(&hdr); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrSnapshot, err)
	}
	if hdr.Pastes < 0 || hdr.Tombs < 0 || hdr.Removed < 0 {
		return nil, fmt.Errorf("%w: negative counts", ErrSnapshot)
	}

	tx := newTxn(emptyState(nil))
	tx.arena = a
	tx.index, tx.clock = hdr.Index, hdr.Clock
	tx.cluster, tx.admin = hdr.Cluster, hdr.Admin
	// What the snapshot removed is unknown: count all of it as removals.
	tx.removal = hdr.Index
	var err error
	if version == snapshotRecords {
		err = decodeRecords(dec, hdr.Pastes, tx)
	} else {
		err = decodePasteFields(dec, version, hdr.Pastes, tx)
	}
	if err != nil {
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

// readSized reads size bytes with read, into buf grown as need be: as
// the bytes come, by doubling, rather than all at once, as a damaged or
// hostile stream of a few bytes may declare gigabytes.
func readSized(read func([]byte) error, buf []byte, size int) ([]byte, error) {
	buf = buf[:0]
	for len(buf) < size {
		n := min(size-len(buf), max(len(buf), 1<<20))
		buf = slices.Grow(buf, n)
		if err := read(buf[len(buf) : len(buf)+n]); err != nil {
			return buf, err
		}
		buf = buf[:len(buf)+n]
	}
	return buf, nil
}

// decodeRecords reads the n paste records of a snapshot of version 3 and
// stores their pastes.
func decodeRecords(dec *msgpack.Decoder, n int, tx *txn) error {
	var rec []byte
	for i := 0; i < n; i++ {
		size, err := dec.DecodeBytesLen()
		if err == nil && (size < v3HeaderBytes || size > maxRecord) {
			err = fmt.Errorf("a record of %d bytes", size)
		}
		if err != nil {
			return fmt.Errorf("%w: paste %d: %v", ErrSnapshot, i, err)
		}
		if rec, err = readSized(dec.ReadFull, rec, size); err != nil {
			return fmt.Errorf("%w: paste %d: %v", ErrSnapshot, i, err)
		}
		p, err := readV3Record(rec)
		if err != nil {
			return fmt.Errorf("%w: paste %d: %v", ErrSnapshot, i, err)
		}
		tx.add(p)
	}
	return nil
}

// decodePasteFields reads the n pastes of a snapshot of version 1 or 2,
// whose fields a goroutine decodes while this one stores and indexes them,
// so that decoding, most of the work, has a core to itself.
func decodePasteFields(dec *msgpack.Decoder, version byte, n int, tx *txn) error {
	batches := make(chan []*Paste, 4)
	free := make(chan []*Paste, restoreBuffers)
	errc := make(chan error, 1)
	go func() { errc <- decodePastes(dec, version, n, batches, free) }()
	for batch := range batches {
		for _, p := range batch {
			tx.add(p)
		}
		// add copied the pastes into their records: the decoder may
		// reuse them, and the room their slices have.
		select {
		case free <- batch[:cap(batch)]:
		default:
		}
	}
	return <-errc
}

// restoreBatch is how many decoded pastes decodePastes hands over at once.
// restoreBuffers is how many batches a restore decodes into, reusing each
// once its pastes are stored: otherwise a restore allocates every paste's
// content only to copy it into a segment.
const (
	restoreBatch   = 256
	restoreBuffers = 8
)

// decodePastes decodes n pastes of a snapshot of the given version and
// sends them to out in batches, reusing those it gets back on free; it
// closes out when it is done or fails.
func decodePastes(dec *msgpack.Decoder, version byte, n int, out chan<- []*Paste, free <-chan []*Paste) error {
	defer close(out)
	decode := func(p *Paste) error { return decodePasteRecord(dec, p) }
	if version == snapshotGzip {
		decode = func(p *Paste) error { return dec.Decode(p) }
	}
	next := func() []*Paste {
		if version != snapshotGzip { // dec.Decode(p) would not reuse
			select {
			case b := <-free:
				return b[:0]
			default:
			}
		}
		return make([]*Paste, 0, restoreBatch)
	}
	batch := next()
	for i := 0; i < n; i++ {
		var p *Paste
		if k := len(batch); k < cap(batch) && batch[:k+1][k] != nil {
			p = batch[:k+1][k]
			*p = Paste{Content: p.Content[:0], TokenHash: p.TokenHash[:0]}
		} else {
			p = new(Paste)
		}
		if err := decode(p); err != nil {
			return fmt.Errorf("%w: paste %d: %v", ErrSnapshot, i, err)
		}
		if p.ID == "" {
			return fmt.Errorf("%w: paste %d has no id", ErrSnapshot, i)
		}
		if batch = append(batch, p); len(batch) == restoreBatch {
			out <- batch
			batch = next()
		}
	}
	if len(batch) > 0 {
		out <- batch
	}
	return nil
}
