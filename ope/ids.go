package ope

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ReadNames makes the reader read each event's name besides its
// numbers: its id (Event.ID: event_id in JSON lines and CSV, as `dpbandit
// serve` exports them; EventId in dsjson, with "/j" appended for slot j
// of a record of several) and its unit (Event.Unit: unit_id, in JSON
// lines and CSV). The Open Bandit Dataset's files name neither. Call it
// before the first Next. Reading names costs a second decoding of each
// JSON line: evaluations, which do not need them, do not call it.
func (rd *Reader) ReadNames() {
	rd.wantUnit, rd.wantID = true, true
}

// names are the keys of a JSON record that name its event.
type names struct {
	EventID *string `json:"event_id"`
	DSID    *string `json:"EventId"`
	// Outcomes is set for a dsjson record of several slots.
	Outcomes json.RawMessage `json:"_outcomes"`
}

// nameJSON sets the id of the event of a JSON line, or of the events of
// a dsjson record (rd.pending, single-slot: one; _outcomes: one a slot).
func (rd *Reader) nameJSON(b []byte, e *Event) error {
	var n names
	if err := json.Unmarshal(b, &n); err != nil {
		return fieldError("event_id", "is not a string")
	}
	if rd.format != "dsjson" {
		if n.EventID != nil {
			e.ID = *n.EventID
		}
		return nil
	}
	if n.DSID == nil {
		return nil
	}
	if n.Outcomes == nil {
		rd.pending[0].e.ID = *n.DSID
		return nil
	}
	for j := range rd.pending {
		rd.pending[j].e.ID = fmt.Sprintf("%s/%d", *n.DSID, j)
	}
	return nil
}

// nameCSV sets the id of a CSV record's event from its event_id column,
// when it has one (its unit_id is read with wantUnit).
func (rd *Reader) nameCSV(rec []string, e *Event) {
	if j, has := rd.cols["event_id"]; has {
		e.ID = strings.TrimSpace(rec[j])
	}
}
