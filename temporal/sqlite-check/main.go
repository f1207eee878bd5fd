// A check of the SQLite driver the Temporal dev server is built with (npm run
// diagnose:temporal-sqlite, which builds this file once per driver version): does a request whose
// context ends interrupt a statement of another request whose context is alive?
//
// It uses the driver as Temporal's sqlite plugin does (database/sql, one open connection, the same
// pool settings) on an in-memory database and on a WAL file. Cancelled writers run short
// transactions with deadlines that end while their statements run, as long polls and unloading
// task queues do in a busy test run; readers with no deadline read one row, as the namespace
// registry does. Any reader error is collateral damage. It prints one JSON line per database.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite"
)

type result struct {
	Database          string `json:"database"`
	Reads             int64  `json:"reads"`
	ReadsInterrupted  int64  `json:"reads_interrupted"`
	ReadsOtherErrors  int64  `json:"reads_other_errors"`
	FirstOtherError   string `json:"first_other_error,omitempty"`
	CancelledRequests int64  `json:"cancelled_requests"`
}

func main() {
	seconds := 10
	if len(os.Args) > 1 {
		fmt.Sscan(os.Args[1], &seconds)
	}
	dir, err := os.MkdirTemp("", "tm-sqlite-check-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	for _, db := range []struct{ name, dsn string }{
		{"memory", "file:check?mode=memory&cache=shared"},
		{"wal-file", "file:" + filepath.Join(dir, "check.db") + "?_pragma=journal_mode(wal)&_pragma=synchronous(off)"},
	} {
		r := run(db.name, db.dsn, time.Duration(seconds)*time.Second)
		line, _ := json.Marshal(r)
		fmt.Println(string(line))
	}
}

func run(name, dsn string, length time.Duration) result {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		panic(err)
	}
	defer db.Close()
	// As Temporal's sqlite plugin (v1.29) sets them.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(0)
	for _, stmt := range []string{
		"CREATE TABLE namespaces (id INTEGER PRIMARY KEY, name TEXT)",
		"CREATE TABLE tasks (id INTEGER PRIMARY KEY, queue TEXT, payload BLOB)",
		"INSERT INTO namespaces VALUES (1, 'default')",
	} {
		if _, err := db.Exec(stmt); err != nil {
			panic(err)
		}
	}

	var reads, interrupted, other, cancelled atomic.Int64
	var firstOther sync.Once
	r := result{Database: name}
	end := time.Now().Add(length)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.Intn(3000))*time.Microsecond)
				if tx, err := db.BeginTx(ctx, nil); err == nil {
					var n int
					_, err = tx.ExecContext(ctx, "INSERT INTO tasks (queue, payload) VALUES ('q', randomblob(2000))")
					if err == nil {
						_, err = tx.ExecContext(ctx, "DELETE FROM tasks WHERE id = (SELECT min(id) FROM tasks)")
					}
					if err == nil {
						err = tx.QueryRowContext(ctx, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 20000) SELECT count(*) FROM c").Scan(&n)
					}
					if err == nil {
						err = tx.Commit()
					} else {
						_ = tx.Rollback()
					}
				}
				cancelled.Add(1)
				cancel()
			}
		}()
	}
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				var ns string
				err := db.QueryRowContext(context.Background(), "SELECT name FROM namespaces WHERE id = 1").Scan(&ns)
				reads.Add(1)
				switch {
				case err == nil && ns == "default":
				case err != nil && strings.Contains(err.Error(), "interrupted"):
					interrupted.Add(1)
				default:
					other.Add(1)
					firstOther.Do(func() { r.FirstOtherError = fmt.Sprintf("%v (read %q)", err, ns) })
				}
			}
		}()
	}
	wg.Wait()
	r.Reads, r.ReadsInterrupted, r.ReadsOtherErrors, r.CancelledRequests = reads.Load(), interrupted.Load(), other.Load(), cancelled.Load()
	return r
}
