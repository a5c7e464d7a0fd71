package fsm

import (
	"encoding/binary"

	"github.com/google/btree"
)

// treeDegree is the B-tree degree of every index: nodes hold 15 to 31
// items, so an index costs a few bytes per item beyond the item itself,
// and a change copies 4 or 5 nodes of at most 31 items at 100k items.
// Ids are random, so each create of a batch copies a leaf and its parent
// of its own: with 32 (up to 63 items) those copies are larger, which the
// collector pays on every node, for no quicker creates or lookups (mostly
// cache misses either way) and a few bytes less per paste.
const treeDegree = 16

// keyed is an item of an idTree: a value under a string id.
type keyed[V any] struct {
	id string
	v  V
}

// idTree is a persistent map from id to V, ordered by id. A clone shares
// every node with its original and copies a node only when it changes it,
// so one version stays readable, unchanged and without locks, while the
// next one is built from it.
type idTree[V any] struct{ t *btree.BTreeG[keyed[V]] }

func newIDTree[V any]() idTree[V] {
	return idTree[V]{btree.NewG(treeDegree, func(a, b keyed[V]) bool { return a.id < b.id })}
}

// clone returns a version that can be changed while t stays as it is.
// Only the writer may call it; t's readers may go on meanwhile.
func (t idTree[V]) clone() idTree[V] { return idTree[V]{t.t.Clone()} }

func (t idTree[V]) get(id string) (V, bool) {
	kv, ok := t.t.Get(keyed[V]{id: id})
	return kv.v, ok
}

func (t idTree[V]) set(id string, v V) { t.t.ReplaceOrInsert(keyed[V]{id, v}) }

// insert sets id to v and returns what id held before, if anything: one
// descent where a get and a set take two.
func (t idTree[V]) insert(id string, v V) (old V, replaced bool) {
	kv, replaced := t.t.ReplaceOrInsert(keyed[V]{id, v})
	return kv.v, replaced
}
func (t idTree[V]) len() int { return t.t.Len() }

// delete removes id and returns what it held.
func (t idTree[V]) delete(id string) (V, bool) {
	kv, ok := t.t.Delete(keyed[V]{id: id})
	return kv.v, ok
}
func (t idTree[V]) ascend(fn func(id string, v V) bool) {
	t.t.Ascend(func(kv keyed[V]) bool { return fn(kv.id, kv.v) })
}

// pasteIndex is the index of the pastes, a persistent map from id to
// record that is cloned like an idTree. Its items hold no id of their own:
// an id is read from its record, and an item carries its id's first eight
// bytes, which order nearly every pair of random ids without a read of
// either record. An item is thus 24 bytes with one pointer for the
// collector to follow, against an idTree's 32 bytes and two, and a lookup
// compares within the tree's nodes until it reaches its record.
type pasteIndex struct{ t *btree.BTreeG[pasteItem] }

// pasteItem is an entry of a pasteIndex. One without a record (a pivot)
// comes before every id with its prefix.
type pasteItem struct {
	pre uint64 // the id's first 8 bytes, big-endian, zero-padded
	r   ref
}

// idPrefix returns the prefix of id that orders pasteItems: ids that
// differ in it compare as their prefixes do.
func idPrefix(id string) uint64 {
	var b [8]byte
	copy(b[:], id)
	return binary.BigEndian.Uint64(b[:])
}

func lessPasteItem(a, b pasteItem) bool {
	switch {
	case a.pre != b.pre:
		return a.pre < b.pre
	case b.r.s == nil:
		return false
	case a.r.s == nil:
		return true
	}
	return recordID(a.r.record()) < recordID(b.r.record())
}

func newPasteIndex() pasteIndex { return pasteIndex{btree.NewG(treeDegree, lessPasteItem)} }

func itemOf(r ref) pasteItem { return pasteItem{idPrefix(recordID(r.record())), r} }

// clone returns a version that can be changed while x stays as it is.
// Only the writer may call it; x's readers may go on meanwhile.
func (x pasteIndex) clone() pasteIndex { return pasteIndex{x.t.Clone()} }

func (x pasteIndex) len() int { return x.t.Len() }

// get returns the record of id: the items with id's prefix are visited
// from the first until one is id's.
func (x pasteIndex) get(id string) (r ref, ok bool) {
	pre := idPrefix(id)
	x.t.AscendGreaterOrEqual(pasteItem{pre: pre}, func(it pasteItem) bool {
		if it.pre != pre {
			return false
		}
		if recordID(it.r.record()) == id {
			r, ok = it.r, true
			return false
		}
		return true
	})
	return r, ok
}

// set indexes r under its record's id.
func (x pasteIndex) set(r ref) { x.t.ReplaceOrInsert(itemOf(r)) }

// insert indexes r under its record's id and returns what the id held
// before, if anything: one descent where a get and a set take two.
func (x pasteIndex) insert(r ref) (old ref, replaced bool) {
	it, replaced := x.t.ReplaceOrInsert(itemOf(r))
	return it.r, replaced
}

// delete removes id and returns its record.
func (x pasteIndex) delete(id string) (ref, bool) {
	r, ok := x.get(id)
	if !ok {
		return ref{}, false
	}
	x.t.Delete(itemOf(r))
	return r, true
}

func (x pasteIndex) ascend(fn func(id string, r ref) bool) {
	x.t.Ascend(func(it pasteItem) bool { return fn(recordID(it.r.record()), it.r) })
}

// timeKey orders by time, then id. Times before 1970 count as 0, as they
// did when these keys were 8 big-endian bytes and an id.
type timeKey struct {
	at int64
	id string
}

func newTimeKey(at int64, id string) timeKey { return timeKey{max(at, 0), id} }

// timeTree is a persistent ordered set of timeKeys, cloned like an idTree.
type timeTree struct{ t *btree.BTreeG[timeKey] }

func newTimeTree() timeTree {
	return timeTree{btree.NewG(treeDegree, func(a, b timeKey) bool {
		return a.at < b.at || a.at == b.at && a.id < b.id
	})}
}

func (t timeTree) clone() timeTree      { return timeTree{t.t.Clone()} }
func (t timeTree) insert(k timeKey)     { t.t.ReplaceOrInsert(k) }
func (t timeTree) delete(k timeKey)     { t.t.Delete(k) }
func (t timeTree) min() (timeKey, bool) { return t.t.Min() }

// due returns the keys whose time is at or before now, in order.
func (t timeTree) due(now int64) []timeKey {
	var keys []timeKey
	t.t.Ascend(func(k timeKey) bool {
		if k.at > now {
			return false
		}
		keys = append(keys, k)
		return true
	})
	return keys
}
