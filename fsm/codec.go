package fsm

import (
	"encoding/binary"
	"math"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// A log entry is the msgpack map that msgpack.Marshal makes of a Command by
// reflection: its fields in the order declared, under their tags, the empty
// ones of omitempty left out, integers at their fixed widths. Encoding and
// decoding entries by reflection was a visible share of a cluster's CPU
// under creates, where every node decodes every entry and the leader each
// forwarded command once more. appendCommand makes the same bytes without
// reflection, and decodeCommand reads back exactly the shapes appendCommand
// makes; any other input (another encoder's integer widths, a key unknown
// or repeated, trailing bytes) is left to msgpack.Unmarshal, as before, so
// that every node of every version reads every entry the same way.
//
// decodeCommand does not copy the bins it reads: a Command's Content,
// TokenHash and Batch are slices of the entry. A log entry does not
// change, and the FSM copies a paste into its segment (segment.go), so that
// one copy of a paste's bytes per node is enough where msgpack made one
// at each decode (three on the leader: admitting the command, the batch
// entry, the command in it).
//
// A field added to Command or Paste must be added here too;
// TestCodecKnowsEveryField fails until it is.

// appendCommand appends the msgpack encoding of c to b.
func appendCommand(b []byte, c *Command) []byte {
	n := 1 + b2i(c.RequestID != "") + b2i(c.Now != 0) + b2i(c.Paste != nil) + b2i(c.ID != "") +
		b2i(len(c.TokenHash) > 0) + b2i(c.Admin) + b2i(len(c.Batch) > 0)
	b = append(b, msgpcode.FixedMapLow|byte(n), msgpcode.FixedStrLow|1, 't', msgpcode.Uint8, byte(c.Type))
	if c.RequestID != "" {
		b = appendString(appendKey(b, "r"), c.RequestID)
	}
	if c.Now != 0 {
		b = appendInt64(appendKey(b, "n"), c.Now)
	}
	if c.Paste != nil {
		b = appendPaste(appendKey(b, "p"), c.Paste)
	}
	if c.ID != "" {
		b = appendString(appendKey(b, "i"), c.ID)
	}
	if len(c.TokenHash) > 0 {
		b = appendBytes(appendKey(b, "h"), c.TokenHash)
	}
	if c.Admin {
		b = append(appendKey(b, "a"), msgpcode.True)
	}
	if len(c.Batch) > 0 {
		b = appendBatch(appendKey(b, "b"), c.Batch)
	}
	return b
}

// appendPaste appends the msgpack encoding of p to b.
func appendPaste(b []byte, p *Paste) []byte {
	n := 4 + b2i(p.Title != "") + b2i(p.Lang != "") + b2i(p.ExpiresAt != 0) + b2i(p.Burn) +
		b2i(p.Encrypted) + b2i(p.RequestID != "")
	b = appendString(appendKey(append(b, msgpcode.FixedMapLow|byte(n)), "id"), p.ID)
	b = appendBytes(appendKey(b, "c"), p.Content)
	if p.Title != "" {
		b = appendString(appendKey(b, "ti"), p.Title)
	}
	if p.Lang != "" {
		b = appendString(appendKey(b, "l"), p.Lang)
	}
	b = appendInt64(appendKey(b, "ca"), p.CreatedAt)
	if p.ExpiresAt != 0 {
		b = appendInt64(appendKey(b, "ea"), p.ExpiresAt)
	}
	if p.Burn {
		b = append(appendKey(b, "b"), msgpcode.True)
	}
	if p.Encrypted {
		b = append(appendKey(b, "e"), msgpcode.True)
	}
	b = appendBytes(appendKey(b, "th"), p.TokenHash)
	if p.RequestID != "" {
		b = appendString(appendKey(b, "r"), p.RequestID)
	}
	return b
}

// AppendPaste appends p to b as msgpack.Marshal encodes a Paste: how a
// leader answers a forwarded create without reflection.
func AppendPaste(b []byte, p *Paste) []byte { return appendPaste(b, p) }

// EncodeBatch returns batch as a msgpack array of bins, the bytes
// msgpack.Marshal makes of it: the body of a follower's forward call.
func EncodeBatch(batch [][]byte) []byte {
	if batch == nil {
		return []byte{msgpcode.Nil}
	}
	return appendBatch(make([]byte, 0, BatchSize(batch)), batch)
}

// DecodeBatch reads a msgpack array of bins as msgpack.Unmarshal reads it
// into a [][]byte, except that the bins of an array EncodeBatch made are
// slices of b, which must not change while they are in use.
func DecodeBatch(b []byte) ([][]byte, error) {
	r := reader{b: b}
	if batch := r.batch(); !r.bad && len(r.b) == 0 {
		return batch, nil
	}
	var batch [][]byte
	err := msgpack.Unmarshal(b, &batch)
	return batch, err
}

// appendBatch appends batch as a msgpack array of bins.
func appendBatch(b []byte, batch [][]byte) []byte {
	b = arrayCodes.append(b, len(batch))
	for _, e := range batch {
		b = appendBytes(b, e)
	}
	return b
}

// appendKey appends a field's name, which is shorter than 32 bytes.
func appendKey(b []byte, k string) []byte {
	return append(append(b, msgpcode.FixedStrLow|byte(len(k))), k...)
}

func appendString(b []byte, s string) []byte {
	return append(strCodes.append(b, len(s)), s...)
}

// appendBytes appends p as a bin, or nil as msgpack's nil.
func appendBytes(b []byte, p []byte) []byte {
	if p == nil {
		return append(b, msgpcode.Nil)
	}
	return append(binCodes.append(b, len(p)), p...)
}

func appendInt64(b []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(append(b, msgpcode.Int64), uint64(v))
}

// lenCodes are the headers of a msgpack value that has a length: fixed|n
// for n under fixedMax, else c8 (if the kind has one), c16 or c32 and n
// in 1, 2 or 4 bytes. A code of 0 is one the kind does not have.
type lenCodes struct {
	fixed        byte
	fixedMax     int
	c8, c16, c32 byte
}

var (
	strCodes   = lenCodes{msgpcode.FixedStrLow, 32, msgpcode.Str8, msgpcode.Str16, msgpcode.Str32}
	binCodes   = lenCodes{0, 0, msgpcode.Bin8, msgpcode.Bin16, msgpcode.Bin32}
	arrayCodes = lenCodes{msgpcode.FixedArrayLow, 16, 0, msgpcode.Array16, msgpcode.Array32}
	// The maps and keys appendCommand makes are short.
	mapCodes = lenCodes{fixed: msgpcode.FixedMapLow, fixedMax: 16}
	keyCodes = lenCodes{fixed: msgpcode.FixedStrLow, fixedMax: 32}
)

// append appends the header of a value of length n, the smallest that
// holds n, as msgpack's encoder does.
func (l lenCodes) append(b []byte, n int) []byte {
	switch {
	case n < l.fixedMax:
		return append(b, l.fixed|byte(n))
	case l.c8 != 0 && n <= math.MaxUint8:
		return append(b, l.c8, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, l.c16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, l.c32), uint32(n))
}

func b2i(ok bool) int {
	if ok {
		return 1
	}
	return 0
}

// reader reads the shapes appendCommand makes. Anything else, the input's
// end included, sets bad, and what was read is then of no use.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) next() byte {
	if len(r.b) == 0 {
		r.bad = true
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) take(n int) []byte {
	if n < 0 || n > len(r.b) {
		r.bad = true
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

// uint reads an n-byte big-endian number.
func (r *reader) uint(n int) uint64 {
	var v uint64
	for _, c := range r.take(n) {
		v = v<<8 | uint64(c)
	}
	return v
}

// length reads the header of a value of one of l's kinds.
func (r *reader) length(l lenCodes) int {
	c := r.next()
	switch {
	case c >= l.fixed && int(c-l.fixed) < l.fixedMax:
		return int(c - l.fixed)
	case l.c8 != 0 && c == l.c8:
		return int(r.uint(1))
	case l.c16 != 0 && c == l.c16:
		return int(r.uint(2))
	case l.c32 != 0 && c == l.c32:
		return int(r.uint(4))
	}
	r.bad = true
	return 0
}

// key reads a field's name, without copying it.
func (r *reader) key() []byte {
	return r.take(r.length(keyCodes))
}

func (r *reader) mapLen() int { return r.length(mapCodes) }

func (r *reader) string() string {
	return string(r.take(r.length(strCodes)))
}

// bytes reads a bin, as a slice of the input that cannot grow into what
// follows it (an empty bin is empty, not nil, as msgpack.Unmarshal makes
// it), or nil.
func (r *reader) bytes() []byte {
	if len(r.b) > 0 && r.b[0] == msgpcode.Nil {
		r.b = r.b[1:]
		return nil
	}
	return r.take(r.length(binCodes))
}

func (r *reader) int64() int64 {
	if r.next() != msgpcode.Int64 {
		r.bad = true
	}
	return int64(r.uint(8))
}

func (r *reader) bool() bool {
	switch r.next() {
	case msgpcode.True:
		return true
	case msgpcode.False:
		return false
	}
	r.bad = true
	return false
}

// seen marks field i as read, and fails the read if it already was.
func (r *reader) seen(mask *uint16, i uint) {
	if *mask&(1<<i) != 0 {
		r.bad = true
	}
	*mask |= 1 << i
}

// decodeCommand decodes b if appendCommand could have made it, and
// reports whether it did.
func decodeCommand(b []byte) (*Command, bool) {
	r := reader{b: b}
	c := new(Command)
	var mask uint16
	for n := r.mapLen(); n > 0 && !r.bad; n-- {
		switch string(r.key()) {
		case "t":
			r.seen(&mask, 0)
			if r.next() != msgpcode.Uint8 {
				r.bad = true
			}
			c.Type = Type(r.next())
		case "r":
			r.seen(&mask, 1)
			c.RequestID = r.string()
		case "n":
			r.seen(&mask, 2)
			c.Now = r.int64()
		case "p":
			r.seen(&mask, 3)
			c.Paste = r.paste()
		case "i":
			r.seen(&mask, 4)
			c.ID = r.string()
		case "h":
			r.seen(&mask, 5)
			c.TokenHash = r.bytes()
		case "a":
			r.seen(&mask, 6)
			c.Admin = r.bool()
		case "b":
			r.seen(&mask, 7)
			c.Batch = r.batch()
		default:
			r.bad = true
		}
	}
	return c, !r.bad && len(r.b) == 0
}

// paste reads a Paste that appendPaste made.
func (r *reader) paste() *Paste {
	p := new(Paste)
	var mask uint16
	for n := r.mapLen(); n > 0 && !r.bad; n-- {
		switch string(r.key()) {
		case "id":
			r.seen(&mask, 0)
			p.ID = r.string()
		case "c":
			r.seen(&mask, 1)
			p.Content = r.bytes()
		case "ti":
			r.seen(&mask, 2)
			p.Title = r.string()
		case "l":
			r.seen(&mask, 3)
			p.Lang = r.string()
		case "ca":
			r.seen(&mask, 4)
			p.CreatedAt = r.int64()
		case "ea":
			r.seen(&mask, 5)
			p.ExpiresAt = r.int64()
		case "b":
			r.seen(&mask, 6)
			p.Burn = r.bool()
		case "e":
			r.seen(&mask, 7)
			p.Encrypted = r.bool()
		case "th":
			r.seen(&mask, 8)
			p.TokenHash = r.bytes()
		case "r":
			r.seen(&mask, 9)
			p.RequestID = r.string()
		default:
			r.bad = true
		}
	}
	return p
}

// batch reads an array of bins that appendBatch made.
func (r *reader) batch() [][]byte {
	n := r.length(arrayCodes)
	if r.bad || n > len(r.b) { // each element takes a byte at least
		r.bad = true
		return nil
	}
	batch := make([][]byte, n)
	for i := range batch {
		batch[i] = r.bytes()
	}
	return batch
}
