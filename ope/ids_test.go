package ope

import (
	"io"
	"os"
	"strings"
	"testing"
)

// readNamed reads a log with ReadNames and returns its events' ids and
// units.
func readNamed(t *testing.T, r io.Reader, arms int) (ids, units []string) {
	t.Helper()
	rd, err := NewReaderWith(r, arms, Reading{})
	if err != nil {
		t.Fatal(err)
	}
	rd.ReadNames()
	for {
		e, err := rd.Next()
		if err == io.EOF {
			return ids, units
		}
		if err != nil {
			t.Fatal(err)
		}
		ids, units = append(ids, e.ID), append(units, e.Unit)
	}
}

// TestReadNames: event ids and units are read from JSON lines (the fast
// path and encoding/json's), CSV and dsjson (single-slot: EventId;
// _outcomes: EventId/slot), and are empty where the log names none.
func TestReadNames(t *testing.T) {
	jl := `{"event_id":"a","unit_id":"u1","action":0,"reward":1,"pscore":0.5}
{"action":1,"reward":0,"pscore":0.5,"event_id":"b","unit_id":null}
{"action":1,"reward":0,"pscore":0.5}
`
	ids, units := readNamed(t, strings.NewReader(jl), 2)
	if strings.Join(ids, ",") != "a,b," || strings.Join(units, ",") != "u1,," {
		t.Fatalf("jsonl: ids %q units %q", ids, units)
	}
	csv := "action,reward,pscore,event_id,unit_id\n0,1,0.5,x,ux\n1,0,0.5,y,\n"
	ids, units = readNamed(t, strings.NewReader(csv), 2)
	if strings.Join(ids, ",") != "x,y" || strings.Join(units, ",") != "ux," {
		t.Fatalf("csv: ids %q units %q", ids, units)
	}
	for file, want := range map[string]string{"single.dsjson": "ev00000", "slots.dsjson": "s00000/0,s00000/1"} {
		f, err := os.Open("testdata/dsjson/" + file)
		if err != nil {
			t.Fatal(err)
		}
		ids, _ := readNamed(t, f, 0)
		f.Close()
		n := len(strings.Split(want, ","))
		if len(ids) < n || strings.Join(ids[:n], ",") != want {
			t.Fatalf("%s: ids %q..., want %s first", file, ids[:min(n, len(ids))], want)
		}
	}
}
