package fsm

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// pasteFields is the length of a paste record in a snapshot of version 2.
const pasteFields = 10

// encodePasteRecord writes p as a paste record of snapshot version 2: a
// msgpack array of its encoded fields in a fixed order, written without
// reflection. The log keeps encoding pastes as maps (Command.Paste), whose
// keys let a field be added without a new format; a snapshot names its
// format in its version byte instead, and holds every paste, where
// msgpack's reflection over the map's keys is slow both ways.
func encodePasteRecord(enc *msgpack.Encoder, p *Paste) error {
	if err := enc.EncodeArrayLen(pasteFields); err != nil {
		return err
	}
	for _, s := range []string{p.ID, p.Title, p.Lang, p.RequestID} {
		if err := enc.EncodeString(s); err != nil {
			return err
		}
	}
	for _, b := range [][]byte{p.Content, p.TokenHash} {
		if err := enc.EncodeBytes(b); err != nil {
			return err
		}
	}
	for _, n := range []int64{p.CreatedAt, p.ExpiresAt} {
		if err := enc.EncodeInt(n); err != nil {
			return err
		}
	}
	for _, b := range []bool{p.Burn, p.Encrypted} {
		if err := enc.EncodeBool(b); err != nil {
			return err
		}
	}
	return nil
}

// decodePasteRecord reads a paste record that encodePasteRecord wrote.
// Its content and token hash go into the room p's slices already have,
// so that a restore can decode every paste into a few buffers.
func decodePasteRecord(dec *msgpack.Decoder, p *Paste) error {
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n != pasteFields {
		return fmt.Errorf("a paste of %d fields, want %d", n, pasteFields)
	}
	for _, s := range []*string{&p.ID, &p.Title, &p.Lang, &p.RequestID} {
		if *s, err = dec.DecodeString(); err != nil {
			return err
		}
	}
	for _, b := range []*[]byte{&p.Content, &p.TokenHash} {
		if err = dec.Decode(b); err != nil {
			return err
		}
	}
	for _, n := range []*int64{&p.CreatedAt, &p.ExpiresAt} {
		if *n, err = dec.DecodeInt64(); err != nil {
			return err
		}
	}
	for _, b := range []*bool{&p.Burn, &p.Encrypted} {
		if *b, err = dec.DecodeBool(); err != nil {
			return err
		}
	}
	return nil
}
