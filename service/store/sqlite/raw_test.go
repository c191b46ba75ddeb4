package sqlite

import (
	"context"
	"database/sql/driver"
	"reflect"
	"strconv"
	"testing"

	"github.com/dpbandit/dpbandit/service/internal/storetest"
	"github.com/dpbandit/dpbandit/service/store"
)

// Commit's arguments are converted as database/sql converts them
// (driver.DefaultParameterConverter), its fast cases included.
func TestRawValuesAsDatabaseSQL(t *testing.T) {
	type status string
	var nilInt *int
	seven := 7
	for _, a := range []any{nil, int64(-3), 2.5, true, []byte("x"), "s", 5, int32(9), uint64(1) << 40, status("learned"), nilInt, &seven, float32(0.5)} {
		got, gerr := value(a)
		want, werr := driver.DefaultParameterConverter.ConvertValue(a)
		if (gerr == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%T %v: %v (%v), database/sql's %v (%v)", a, a, got, gerr, want, werr)
		}
	}
	if _, err := value(uint64(1) << 63); err == nil {
		t.Error("a uint64 beyond int64 was taken")
	}
}

// BenchmarkCommit measures Commit of a group of eight changes, four
// decisions and the rewards of the four before them, as the writer
// groups them under dpbandit loadtest: one op is one group.
func BenchmarkCommit(b *testing.B) {
	ctx := context.Background()
	st, err := Open(ctx, storetest.SQLite(b))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if err := st.Own(ctx, "bench", nil); err != nil {
		b.Fatal(err)
	}
	if err := st.CreateExperiment(ctx, store.Experiment{Key: "t/e", Tenant: "t", Definition: "{}", Status: store.Active}); err != nil {
		b.Fatal(err)
	}
	event := func(seq int64) store.Event {
		id := strconv.FormatInt(seq, 10)
		return store.Event{Seq: seq, ID: id, Unit: "u" + id, Arm: int(seq % 5), Plan: 1, Decided: seq, Status: store.Pending, PScore: 1}
	}
	var seq int64
	b.ReportAllocs()
	for b.Loop() {
		batch := make([]*store.Change, 0, 8)
		for range 4 {
			seq++
			ins := event(seq)
			batch = append(batch, &store.Change{Exp: "t/e", Insert: &ins})
			if seq > 4 {
				r := 1.0
				upd := event(seq - 4)
				upd.Status, upd.Reward, upd.RSeq, upd.At = store.Learned, &r, seq, seq
				batch = append(batch, &store.Change{Exp: "t/e", Update: &upd, Debit: 1000})
			}
		}
		if err := st.Commit(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
}
