package fsm

import (
	"fmt"
	"io"
)

// WriteSnapshot writes the current state to w in the snapshot format, the
// body of a backup, and returns the log index it was taken at. Applies go
// on meanwhile: the state it writes is immutable.
func (f *FSM) WriteSnapshot(w io.Writer) (uint64, error) {
	sn := f.capture()
	defer sn.Release()
	if err := sn.writeTo(w, ""); err != nil {
		return 0, fmt.Errorf("write snapshot: %w", err)
	}
	return sn.s.index, nil
}

// SnapshotInfo describes a snapshot that decoded completely.
type SnapshotInfo struct {
	Index   uint64
	Pastes  int64
	Bytes   int64
	Removed []string // the node ids an operator removed
}

// InspectSnapshot decodes a whole snapshot, checks it as Restore would, and
// describes it. It returns an error wrapping ErrSnapshot when Restore would
// refuse it.
func InspectSnapshot(r io.Reader) (SnapshotInfo, error) {
	s, err := readSnapshot(r, &segments{discard: true})
	if err != nil {
		return SnapshotInfo{}, err
	}
	in := SnapshotInfo{Index: s.index, Pastes: s.count, Bytes: s.bytes}
	s.removed.ascend(func(id string, _ int64) bool {
		in.Removed = append(in.Removed, id)
		return true
	})
	return in, nil
}
