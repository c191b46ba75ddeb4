// Command sqlitefloor measures the floor that SQLite sets under the
// decision service's CPU per decision+reward pair (docs/performance.md):
// the CPU of the service's own storage work alone, with the service's
// driver (modernc.org/sqlite) and pragmas (WAL, synchronous FULL), and
// its group commits: each commit inserts the decisions of -group pairs
// (a row each, with a random unique event id) and updates the rows of
// the group before it with their rewards, as the service's writer does,
// one fsync a commit, its statements prepared once.
//
//	go run ./bench/sqlitefloor [-group 6] [-pairs 100000]
//
// It prints the process's CPU (user and system, getrusage) per pair.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"time"

	_ "modernc.org/sqlite"
)

func main() {
	group := flag.Int("group", 6, "pairs per commit")
	pairs := flag.Int("pairs", 100000, "pairs in all")
	flag.Parse()
	dir, err := os.MkdirTemp("", "sqlitefloor")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// The service's pragmas (service/store/sqlite).
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "f.db")+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(5000)&_pragma=temp_store(MEMORY)&_txlock=immediate")
	if err != nil {
		log.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	for _, q := range []string{
		`CREATE TABLE events (exp TEXT NOT NULL, seq BIGINT NOT NULL, event_id TEXT NOT NULL, unit_id TEXT NOT NULL,
			arm INTEGER NOT NULL, decided BIGINT NOT NULL, status TEXT NOT NULL, reward REAL, rseq BIGINT NOT NULL DEFAULT 0,
			pscore REAL NOT NULL DEFAULT 1, PRIMARY KEY (exp, seq)) WITHOUT ROWID`,
		`CREATE UNIQUE INDEX events_id ON events (exp, event_id)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			log.Fatal(err)
		}
	}
	ins, err := db.PrepareContext(ctx, `INSERT INTO events (exp, seq, event_id, unit_id, arm, decided, status) VALUES (?, ?, ?, ?, ?, ?, 'pending')`)
	if err != nil {
		log.Fatal(err)
	}
	upd, err := db.PrepareContext(ctx, `UPDATE events SET status = 'learned', reward = ?, rseq = ? WHERE exp = ? AND seq = ?`)
	if err != nil {
		log.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	u0, s0 := usage()
	start := time.Now()
	seq := int64(0)
	for done := 0; done < *pairs; done += *group {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			log.Fatal(err)
		}
		for i := range *group {
			id := fmt.Sprintf("%016x", r.Uint64())
			if _, err := tx.StmtContext(ctx, ins).ExecContext(ctx, "default/floor", seq+int64(i), id, id, i%5, time.Now().UnixNano()); err != nil {
				log.Fatal(err)
			}
		}
		for i := range *group { // the previous group's rewards
			if seq == 0 {
				break
			}
			if _, err := tx.StmtContext(ctx, upd).ExecContext(ctx, 1.0, seq+int64(i), "default/floor", seq-int64(*group)+int64(i)); err != nil {
				log.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			log.Fatal(err)
		}
		seq += int64(*group)
	}
	u1, s1 := usage()
	n := float64(seq)
	fmt.Printf("%.0f pairs, %d a commit, in %v: %.1f us of CPU per pair (%.1f user, %.1f system)\n",
		n, *group, time.Since(start).Round(time.Millisecond), (u1-u0+s1-s0)/n*1e6, (u1-u0)/n*1e6, (s1-s0)/n*1e6)
}

// usage returns this process's user and system CPU time, in seconds.
func usage() (user, system float64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		log.Fatal(err)
	}
	sec := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return sec(ru.Utime), sec(ru.Stime)
}
