package ope

import "bytes"

// KeepRecords makes the reader keep each dsjson event's record, the
// line's JSON as the log has it (Event.Record's text, in Event.Text), so
// that a caller can read what the hashing of the reader's Reading drops:
// the raw features, to hash them its own way (the service's Personalizer
// imports rebuild each record's rank request from them). It also reads
// each record's actions as its own, as a rank's: the K of a record with
// c._multi is its length, whatever the reader's arms (a Personalizer
// log's ranks list different actions), and the features, checked as
// ever, are hashed into 2 dimensions only: the caller hashes them its
// own way (Event.X and Event.Actions are not the Reading's). Call it
// before the first Next.
// Other formats keep nothing.
func (rd *Reader) KeepRecords() {
	rd.keepText = true
}

// Format returns the format read: jsonl, csv, dsjson or obp (named, or
// detected from the content).
func (rd *Reader) Format() string { return rd.format }

// keep gives the events pending from a dsjson record b its text.
func (rd *Reader) keep(b []byte) {
	text := bytes.Clone(b)
	for i := range rd.pending {
		rd.pending[i].e.Text = text
	}
}
