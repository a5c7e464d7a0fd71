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
// where the paste's record is, cloned like an idTree. Its items keep what
// the hot path needs without reading the record: the id and the expiry.
// An item is 48 bytes, and its id a small allocation of its own; the
// record, content and all, stays on disk.
//
// An item also carries its id's first eight bytes as a number, which
// orders nearly every pair of random ids with one comparison: a lookup
// then compares strings only at the item it finds.
type pasteIndex struct{ t *btree.BTreeG[pasteItem] }

// pasteItem is an entry of a pasteIndex.
type pasteItem struct {
	pre     uint64 // the id's first 8 bytes, big-endian, zero-padded
	id      string
	r       ref
	expires int64 // Unix nanoseconds; 0: never
}

// newItem returns the index entry of the paste id stored at r.
func newItem(id string, r ref, expires int64) pasteItem {
	return pasteItem{pre: idPrefix(id), id: id, r: r, expires: expires}
}

// idPrefix returns the prefix of id that orders pasteItems: ids that
// differ in it compare as their prefixes do.
func idPrefix(id string) uint64 {
	var b [8]byte
	copy(b[:], id)
	return binary.BigEndian.Uint64(b[:])
}

func lessPasteItem(a, b pasteItem) bool {
	if a.pre != b.pre {
		return a.pre < b.pre
	}
	return a.id < b.id
}

func newPasteIndex() pasteIndex { return pasteIndex{btree.NewG(treeDegree, lessPasteItem)} }

// clone returns a version that can be changed while x stays as it is.
// Only the writer may call it; x's readers may go on meanwhile.
func (x pasteIndex) clone() pasteIndex { return pasteIndex{x.t.Clone()} }

func (x pasteIndex) len() int { return x.t.Len() }

func (x pasteIndex) get(id string) (pasteItem, bool) {
	return x.t.Get(pasteItem{pre: idPrefix(id), id: id})
}

// set indexes it under its id.
func (x pasteIndex) set(it pasteItem) { x.t.ReplaceOrInsert(it) }

// insert indexes it and returns what its id held before, if anything:
// one descent where a get and a set take two.
func (x pasteIndex) insert(it pasteItem) (old pasteItem, replaced bool) {
	return x.t.ReplaceOrInsert(it)
}

// delete removes id and returns its item.
func (x pasteIndex) delete(id string) (pasteItem, bool) {
	return x.t.Delete(pasteItem{pre: idPrefix(id), id: id})
}

func (x pasteIndex) ascend(fn func(id string, it pasteItem) bool) {
	x.t.Ascend(func(it pasteItem) bool { return fn(it.id, it) })
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
