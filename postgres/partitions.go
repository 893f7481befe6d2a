package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The tables partitioned by day on created_at (migration 0027): history
// that grows with traffic and is kept for the events' retention.
var partitionedTables = []string{"webhook_deliveries", "turn_events"}

// PartitionDaysAhead is how many days after today have their partitions
// made by each purge (which runs at start and every hour): rows never
// land in the DEFAULT partition while the janitor runs.
const PartitionDaysAhead = 3

// partitionLockTimeout bounds the wait for the locks that attaching and
// dropping a partition take (ACCESS EXCLUSIVE on the parent to drop, on
// the DEFAULT partition to attach): a long read holding them makes the
// maintenance give up until the next purge rather than queue every
// writer behind it.
const partitionLockTimeout = 2 * time.Second

const dayMS = int64(24 * time.Hour / time.Millisecond)

// partitionName is the name of table's partition of day (UTC midnight
// in Unix milliseconds): turn_events_p20261127.
func partitionName(table string, day int64) string {
	return table + "_p" + time.UnixMilli(day).UTC().Format("20060102")
}

// partitionDay reads the day back from a partition's name; false for
// another table's partition or the DEFAULT one.
func partitionDay(table, name string) (int64, bool) {
	suffix, ok := strings.CutPrefix(name, table+"_p")
	if !ok || len(suffix) != 8 {
		return 0, false
	}
	t, err := time.Parse("20060102", suffix)
	if err != nil {
		return 0, false
	}
	return t.UnixMilli(), true
}

// MaintainPartitions makes the partitions of the days from now's to
// PartitionDaysAhead after it, and drops the partitions whose whole day
// is before cutoff, for every partitioned table. It returns the rows the
// dropped partitions held, as PostgreSQL estimates them (counting them
// would read what dropping saves reading). A partition whose locks are
// not granted within partitionLockTimeout is left for the next run.
func (db *DB) MaintainPartitions(ctx context.Context, now, cutoff time.Time) (int64, error) {
	if err := db.EnsurePartitions(ctx, now, now.Add(PartitionDaysAhead*24*time.Hour)); err != nil {
		return 0, err
	}
	var dropped int64
	for _, table := range partitionedTables {
		have, err := db.partitions(ctx, table)
		if err != nil {
			return dropped, err
		}
		for d, name := range have {
			if d+dayMS > cutoff.UnixMilli() {
				continue
			}
			n, err := db.dropPartition(ctx, name)
			if err != nil {
				return dropped, err
			}
			dropped += n
		}
	}
	return dropped, nil
}

// EnsurePartitions makes, for every partitioned table, the partitions of
// the days from from's to to's (UTC) that do not exist yet, moving their
// rows out of the DEFAULT partition. The janitor makes today's and the
// days ahead (MaintainPartitions); a tool that writes history directly
// (bench/growth's seeder) makes the days it writes.
func (db *DB) EnsurePartitions(ctx context.Context, from, to time.Time) error {
	first, last := from.UTC().Truncate(24*time.Hour).UnixMilli(), to.UTC().Truncate(24*time.Hour).UnixMilli()
	for _, table := range partitionedTables {
		have, err := db.partitions(ctx, table)
		if err != nil {
			return err
		}
		for d := first; d <= last; d += dayMS {
			if _, ok := have[d]; ok {
				continue
			}
			if err := db.makePartition(ctx, table, d); err != nil {
				return err
			}
		}
	}
	return nil
}

// partitions returns table's day partitions by day.
func (db *DB) partitions(ctx context.Context, table string) (map[int64]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT c.relname FROM pg_inherits i
		JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
		WHERE p.relname = $1 AND p.relnamespace = current_schema()::regnamespace`, table)
	if err != nil {
		return nil, fmt.Errorf("postgres: list partitions of %s: %w", table, err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("postgres: list partitions of %s: %w", table, err)
	}
	out := map[int64]string{}
	for _, n := range names {
		if d, ok := partitionDay(table, n); ok {
			out[d] = n
		}
	}
	return out, nil
}

// makePartition makes table's partition of day: a table of the parent's
// shape, filled with the rows of that day the DEFAULT partition holds
// (moved, in the same transaction), then attached. It locks the parent
// and the DEFAULT partition first, in the order ATTACH does, the DEFAULT
// one against writes: a row of that day written into DEFAULT after the
// move (by a transaction open when it ran) would make the ATTACH fail
// (23514, "updated partition constraint for default partition would be
// violated"), as it did when processes wrote history before their first
// purge made the day's partition.
func (db *DB) makePartition(ctx context.Context, table string, day int64) error {
	name := pgx.Identifier{partitionName(table, day)}.Sanitize()
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`SET LOCAL lock_timeout = %d`, partitionLockTimeout.Milliseconds())); err != nil {
			return err
		}
		// SHARE ROW EXCLUSIVE, not just the SHARE UPDATE EXCLUSIVE that
		// ATTACH needs: an INSERT into the table routes its rows by the
		// partitions it saw when it began, so one that began before the
		// new partition and then waited for the default's lock below
		// would put a row of the new day into the default after this
		// commits, which the default's new constraint refuses (23514; a
		// POST failed so under load). The lock waits for the
		// transactions writing to the table and holds new writes until
		// this commits, a moment once a day per table. Unlike SHARE it
		// conflicts with itself: two processes making the same day at
		// once (each runs its purge at start) would both hold SHARE, one
		// then the default's lock, and the first one's ATTACH would wait
		// for the other's SHARE while the other waited for the default:
		// a deadlock (40P01, seen in a multi-process run). Now the second
		// waits for the first to commit and finds the partition made.
		if _, err := tx.Exec(ctx, `LOCK TABLE ONLY `+table+` IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `LOCK TABLE `+table+`_default IN ACCESS EXCLUSIVE MODE`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE `+name+` (LIKE `+table+` INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `WITH moved AS (DELETE FROM `+table+`_default WHERE created_at >= $1 AND created_at < $2 RETURNING *)
			INSERT INTO `+name+` SELECT * FROM moved`, day, day+dayMS); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM (%d) TO (%d)`, table, name, day, day+dayMS))
		return err
	})
	if err != nil && !lockNotGranted(err) && !alreadyMade(err) {
		return fmt.Errorf("postgres: make partition %s: %w", name, err)
	}
	return nil
}

// dropPartition drops a partition wholly past the retention and returns
// the rows it held by PostgreSQL's estimate.
func (db *DB) dropPartition(ctx context.Context, name string) (int64, error) {
	var rows float64
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`SET LOCAL lock_timeout = %d`, partitionLockTimeout.Milliseconds())); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = $1::regclass`, name).Scan(&rows); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DROP TABLE `+pgx.Identifier{name}.Sanitize())
		return err
	})
	if err != nil && !lockNotGranted(err) && !alreadyDropped(err) {
		return 0, fmt.Errorf("postgres: drop partition %s: %w", name, err)
	}
	if err != nil {
		return 0, nil
	}
	return int64(rows), nil
}

// lockNotGranted reports a lock_timeout: the partition is left for the
// next run.
func lockNotGranted(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55P03"
}

// alreadyDropped reports that another process dropped the partition
// first (both listed it): the second's DROP waited for the first's lock
// and then found no table (42P01), or the second read the estimate while
// the first committed, when the name still resolves (the cast reads the
// catalog as of that moment) but the statement's snapshot no longer
// holds the table's row in pg_class (no rows; seen in CI).
func alreadyDropped(err error) bool {
	var pe *pgconn.PgError
	return errors.Is(err, pgx.ErrNoRows) || errors.As(err, &pe) && pe.Code == "42P01"
}

// alreadyMade reports that another process made the partition first.
func alreadyMade(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "42P07" || pe.Code == "23505")
}
