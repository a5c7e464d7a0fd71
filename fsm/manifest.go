package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// Snapshots of version 4 and 5 refer to segments. Both start with the
// magic bytes and the version byte, then the manifest's length (8 bytes)
// and CRC-32C (4 bytes), then the manifest: a msgpack manifest, which
// holds the index, the tombstones and the removed nodes, and lists the
// segments with their sizes and checksums.
//
// Version 5 (snapshotLocal) is what a node keeps in its snapshot store: the
// manifest alone, its segments hard links in the snapshot's directory, so
// a snapshot writes the index and never a paste. Version 4
// (snapshotSegments) is the same snapshot as one stream, the segments'
// bytes following the manifest in its order: what a follower installs and
// a backup holds. ExpandSnapshot turns the one into the other, and its
// size is known from the manifest, as Raft needs it before sending.

// manifest is a snapshot's state but for the segments' bytes.
type manifest struct {
	Header   snapshotHeader  `msgpack:"h"`
	Segments []segmentEntry  `msgpack:"s"`
	Index    []byte          `msgpack:"x"` // see appendIndexEntry
	Tombs    []tombRecord    `msgpack:"t"`
	Removed  []removedRecord `msgpack:"r"`
}

type segmentEntry struct {
	ID   uint64 `msgpack:"id"`
	Size int64  `msgpack:"n"`
	CRC  uint32 `msgpack:"c"`
}

// maxManifest bounds the manifest a reader allocates for.
const maxManifest = 4 << 30

// buildManifest describes s: its pastes by where their records are.
func buildManifest(s *state) (*manifest, []*segment) {
	m := &manifest{Header: snapshotHeader{
		Version: snapshotSegments,
		Index:   s.index,
		Clock:   s.clock,
		Pastes:  s.pastes.len(),
		Bytes:   s.bytes,
		Tombs:   s.tombs.len(),
		Removed: s.removed.len(),
		Cluster: s.cluster,
		Admin:   s.admin,
	}}
	pos := make(map[*segment]int)
	var segs []*segment
	idx := make([]byte, 0, s.pastes.len()*32)
	s.pastes.ascend(func(id string, it pasteItem) bool {
		i, ok := pos[it.r.s]
		if !ok {
			i = len(segs)
			pos[it.r.s] = i
			segs = append(segs, it.r.s)
			m.Segments = append(m.Segments, segmentEntry{ID: it.r.s.id, Size: it.r.s.size, CRC: it.r.s.crc})
		}
		idx = appendIndexEntry(idx, i, it)
		return true
	})
	m.Index = idx
	s.tombs.ascend(func(id string, t *Tombstone) bool {
		m.Tombs = append(m.Tombs, tombRecord{ID: id, Tomb: t.withoutPaste()})
		return true
	})
	s.removed.ascend(func(id string, at int64) bool {
		m.Removed = append(m.Removed, removedRecord{ID: id, At: at})
		return true
	})
	return m, segs
}

// appendIndexEntry appends an index entry: the segment's position in the
// manifest, the record's offset and length and the expiry as varints, then
// the id's length and the id.
func appendIndexEntry(b []byte, seg int, it pasteItem) []byte {
	b = binary.AppendUvarint(b, uint64(seg))
	b = binary.AppendUvarint(b, uint64(it.r.off))
	b = binary.AppendUvarint(b, uint64(it.r.n))
	b = binary.AppendVarint(b, it.expires)
	b = binary.AppendUvarint(b, uint64(len(it.id)))
	return append(b, it.id...)
}

// writeManifest writes the head of a snapshot of version v and m.
func writeManifest(w io.Writer, v byte, m *manifest) error {
	body, err := msgpack.Marshal(m)
	if err != nil {
		return err
	}
	head := make([]byte, 0, len(snapshotMagic)+13)
	head = append(append(head, snapshotMagic...), v)
	head = binary.LittleEndian.AppendUint64(head, uint64(len(body)))
	head = binary.LittleEndian.AppendUint32(head, crc32.Checksum(body, castagnoli))
	if _, err := w.Write(head); err != nil {
		return err
	}
	_, err = w.Write(body)
	return err
}

// readManifest reads the manifest that follows the version byte.
func readManifest(r io.Reader) (*manifest, int64, error) {
	var head [12]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, 0, fmt.Errorf("%w: manifest: %v", ErrSnapshot, err)
	}
	n := binary.LittleEndian.Uint64(head[:])
	if n > maxManifest {
		return nil, 0, fmt.Errorf("%w: a manifest of %d bytes", ErrSnapshot, n)
	}
	body, err := readSized(func(b []byte) error { _, err := io.ReadFull(r, b); return err }, nil, int(n))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: manifest: %v", ErrSnapshot, err)
	}
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(head[8:]) {
		return nil, 0, fmt.Errorf("%w: the manifest fails its checksum", ErrSnapshot)
	}
	m := new(manifest)
	if err := msgpack.Unmarshal(body, m); err != nil {
		return nil, 0, fmt.Errorf("%w: manifest: %v", ErrSnapshot, err)
	}
	h := m.Header
	if h.Pastes < 0 || h.Tombs < 0 || h.Removed < 0 || h.Bytes < 0 {
		return nil, 0, fmt.Errorf("%w: negative counts", ErrSnapshot)
	}
	for _, e := range m.Segments {
		if e.Size < 0 || e.Size > 1<<40 {
			return nil, 0, fmt.Errorf("%w: segment %d of %d bytes", ErrSnapshot, e.ID, e.Size)
		}
	}
	return m, int64(len(head)) + int64(n), nil
}

// streamSize is the length of the version 4 stream of m, whose manifest
// part is head bytes after the version byte.
func streamSize(m *manifest, head int64) int64 {
	n := int64(len(snapshotMagic)+1) + head
	for _, e := range m.Segments {
		n += e.Size
	}
	return n
}

// buildState makes the state m describes over segs, the segments in m's
// order.
func buildState(m *manifest, a *arena, segs []*segment) (*state, error) {
	tx := newTxn(emptyState(nil))
	tx.arena = a
	h := m.Header
	tx.index, tx.clock = h.Index, h.Clock
	tx.cluster, tx.admin = h.Cluster, h.Admin
	// What the snapshot removed is unknown: count all of it as removals.
	tx.removal = h.Index
	for _, s := range segs {
		a.all[s.id] = s
	}
	b := m.Index
	next := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return v
	}
	for i := 0; i < h.Pastes; i++ {
		seg, off, n := next(), next(), next()
		expires, k := binary.Varint(b)
		if k <= 0 {
			return nil, fmt.Errorf("%w: index entry %d cut short", ErrSnapshot, i)
		}
		b = b[k:]
		idLen := next()
		if b == nil || idLen == 0 || idLen > uint64(len(b)) {
			return nil, fmt.Errorf("%w: index entry %d cut short", ErrSnapshot, i)
		}
		id := string(b[:idLen])
		b = b[idLen:]
		if seg >= uint64(len(segs)) || n < rHeader || off+n > uint64(segs[seg].size) {
			return nil, fmt.Errorf("%w: index entry %d (%s) points outside its segment", ErrSnapshot, i, id)
		}
		s := segs[seg]
		s.live += int64(n)
		tx.pastes.set(newItem(id, ref{s, uint32(off), uint32(n)}, expires))
		if expires != 0 {
			tx.expiry.insert(newTimeKey(expires, id))
		}
		tx.count++
	}
	tx.bytes = h.Bytes
	if len(b) != 0 || tx.pastes.len() != h.Pastes {
		return nil, fmt.Errorf("%w: the index does not hold %d pastes", ErrSnapshot, h.Pastes)
	}
	for _, s := range segs {
		// When a segment was written and its garbage removed is not in the
		// manifest: the snapshot's index and clock bound both, so that
		// Purge, not compaction alone, reclaims what a restart finds.
		s.wrote = h.Index
		if s.live < s.size {
			s.freed, s.created = max(h.Clock, 1), h.Index
		}
		a.check(s)
	}
	for _, r := range m.Tombs {
		if r.Tomb == nil {
			return nil, fmt.Errorf("%w: tombstone %s without its record", ErrSnapshot, r.ID)
		}
		tx.addTomb(r.ID, r.Tomb)
	}
	for _, r := range m.Removed {
		tx.removed.set(r.ID, r.At)
	}
	return tx.commit(), nil
}

// readSegmentedStream reads the rest of a version 4 stream, writing its
// segments anew through a, and returns the state. On failure it removes
// the segments it wrote.
func readSegmentedStream(r io.Reader, a *arena) (st *state, err error) {
	m, _, err := readManifest(r)
	if err != nil {
		return nil, err
	}
	var segs []*segment
	defer func() {
		if err != nil {
			for _, s := range segs {
				a.segs.remove(s)
			}
		}
	}()
	buf := make([]byte, 1<<20)
	for _, e := range m.Segments {
		s, err := a.segs.create()
		if err != nil {
			return nil, err
		}
		segs = append(segs, s)
		for left := e.Size; left > 0; {
			chunk := buf[:min(int64(len(buf)), left)]
			if _, err := io.ReadFull(r, chunk); err != nil {
				return nil, fmt.Errorf("%w: segment %d: %v", ErrSnapshot, e.ID, err)
			}
			s.append(chunk)
			if err := s.flush(); err != nil {
				return nil, err
			}
			left -= int64(len(chunk))
		}
		if s.crc != e.CRC {
			return nil, fmt.Errorf("%w: segment %d fails its checksum", ErrSnapshot, e.ID)
		}
		s.sealed = true
	}
	return buildState(m, a, segs)
}

// writeSegmented writes sn's state as a version 4 stream, or, to a local
// sink, as version 5 with the segments linked into dir.
func (sn *snapshot) writeSegmented(w io.Writer, dir string) error {
	m, segs := buildManifest(sn.s)
	v := byte(snapshotSegments)
	if dir != "" {
		v = snapshotLocal
		for _, s := range segs {
			if err := s.file.Sync(); err != nil {
				return fmt.Errorf("sync segment %s: %w", segmentName(s.id), err)
			}
			if err := linkFile(s.path, filepath.Join(dir, segmentName(s.id))); err != nil {
				return fmt.Errorf("link segment: %w", err)
			}
		}
		if err := syncDir(dir); err != nil {
			return err
		}
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := writeManifest(bw, v, m); err != nil {
		return err
	}
	if v == snapshotSegments {
		for i, s := range segs {
			if _, err := io.Copy(bw, io.NewSectionReader(s.file, 0, m.Segments[i].Size)); err != nil {
				return fmt.Errorf("segment %s: %w", segmentName(s.id), err)
			}
		}
	}
	return bw.Flush()
}

// SplitStream copies the snapshot r streams to w, but for a stream of
// version 4, the whole state as a leader sends it, which it keeps as a
// snapshot of version 5 in dir: the manifest to w, and each segment to a
// file of dir, checked against its checksum and synced. InstallSnapshot
// then links those files into the store instead of writing the segments
// again, so an install takes the store's size on disk once, not twice.
func SplitStream(r io.Reader, dir string, w io.Writer) error {
	br := bufio.NewReaderSize(r, 1<<20)
	head, err := br.Peek(len(snapshotMagic) + 1)
	if err != nil || string(head[:len(snapshotMagic)]) != snapshotMagic || head[len(snapshotMagic)] != snapshotSegments {
		_, err := io.Copy(w, br)
		return err
	}
	br.Discard(len(head))
	m, _, err := readManifest(br)
	if err != nil {
		return err
	}
	for _, e := range m.Segments {
		if err := receiveSegment(br, filepath.Join(dir, segmentName(e.ID)), e); err != nil {
			return err
		}
	}
	if _, err := br.Peek(1); err == nil {
		return fmt.Errorf("%w: bytes after the last segment", ErrSnapshot)
	} else if err != io.EOF {
		return err
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	return writeManifest(w, snapshotLocal, m)
}

// receiveSegment writes segment e, the next e.Size bytes of r, to path.
func receiveSegment(r io.Reader, path string, e segmentEntry) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("receive segment: %w", err)
	}
	defer f.Close()
	crc := crc32.New(castagnoli)
	if _, err := io.CopyN(io.MultiWriter(f, crc), r, e.Size); err != nil {
		return fmt.Errorf("%w: segment %d: %v", ErrSnapshot, e.ID, err)
	}
	if crc.Sum32() != e.CRC {
		return fmt.Errorf("%w: segment %d fails its checksum", ErrSnapshot, e.ID)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("receive segment: %w", err)
	}
	return f.Close()
}

// errNotLocal means a snapshot holds its state itself: it is not of
// version 5.
var errNotLocal = errors.New("not a snapshot of linked segments")

// openLocal reads the manifest of the version 5 snapshot in dir.
func openLocal(dir string) (*manifest, int64, error) {
	f, err := os.Open(filepath.Join(dir, "state.bin"))
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var head [len(snapshotMagic) + 1]byte
	if _, err := io.ReadFull(br, head[:]); err != nil {
		return nil, 0, fmt.Errorf("%w: header: %v", ErrSnapshot, err)
	}
	if string(head[:len(snapshotMagic)]) != snapshotMagic || head[len(snapshotMagic)] != snapshotLocal {
		return nil, 0, errNotLocal
	}
	return readManifest(br)
}

// ExpandSnapshot returns, for the snapshot in dir (a directory of Raft's
// file snapshot store) whose segments are linked beside it, the size of
// its version 4 stream and a reader of that stream. ok is false when the
// snapshot is of another version: its state.bin is its stream.
func ExpandSnapshot(dir string) (size int64, rc io.ReadCloser, ok bool, err error) {
	m, head, err := openLocal(dir)
	if errors.Is(err, errNotLocal) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, fmt.Errorf("open snapshot: %w", err)
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(expand(pw, m, dir))
	}()
	return streamSize(m, head), pr, true, nil
}

func expand(w io.Writer, m *manifest, dir string) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := writeManifest(bw, snapshotSegments, m); err != nil {
		return err
	}
	for _, e := range m.Segments {
		f, err := os.Open(filepath.Join(dir, segmentName(e.ID)))
		if err != nil {
			return fmt.Errorf("snapshot segment: %w", err)
		}
		_, err = io.Copy(bw, io.NewSectionReader(f, 0, e.Size))
		f.Close()
		if err != nil {
			return fmt.Errorf("snapshot segment %s: %w", segmentName(e.ID), err)
		}
	}
	return bw.Flush()
}

// LoadSnapshot makes the FSM's state the snapshot in dir, a directory of
// Raft's file snapshot store, at a node's start. A snapshot of linked
// segments costs its index: the segments are linked back into the FSM's
// directory, not read. Any other version is restored as Restore does,
// which writes its pastes into new segments: how a data dir of an older
// version moves in.
func (f *FSM) LoadSnapshot(dir string) error { return f.load(dir, false) }

// InstallSnapshot is LoadSnapshot of a snapshot that another node sent
// (SplitStream kept it): its segments are linked in under new ids, as
// theirs may be the names of this node's own.
func (f *FSM) InstallSnapshot(dir string) error { return f.load(dir, true) }

func (f *FSM) load(dir string, fresh bool) error {
	m, _, err := openLocal(dir)
	if errors.Is(err, errNotLocal) {
		file, err := os.Open(filepath.Join(dir, "state.bin"))
		if err != nil {
			return fmt.Errorf("load snapshot: %w", err)
		}
		return f.Restore(file)
	}
	if err != nil {
		return fmt.Errorf("load snapshot %s: %w", dir, err)
	}
	start := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	a := newArena(f.segs)
	segs := make([]*segment, len(m.Segments))
	for i, e := range m.Segments {
		id := e.ID
		if fresh {
			id = 0
		}
		if segs[i], err = f.segs.adopt(filepath.Join(dir, segmentName(e.ID)), id, e.Size, e.CRC); err != nil {
			return fmt.Errorf("load snapshot %s: %w", dir, err)
		}
	}
	s, err := buildState(m, a, segs)
	if err != nil {
		return fmt.Errorf("load snapshot %s: %w", dir, err)
	}
	f.replace(s)
	f.log.Info("loaded snapshot", "index", s.index, "pastes", s.count, "segments", len(segs), "took", time.Since(start).Round(time.Millisecond))
	return nil
}
