package sqlstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/amsdev/ams"
)

// The parts of a queue claim that both engines share: the count of
// deliveries in flight that the caps of ams.Claim limit, and the order in
// which due jobs are taken. SQLite claims in Go with them; PostgreSQL's
// claim is one statement that computes the same in SQL (postgres/claim.go).
//
// Both find due work through webhook_wakes (migration 0032): the
// webhooks whose wake rows are due, earliest first, of which a claim
// looks at ProbedWebhooks(c) at most that have free slots; never at
// every active webhook, nor at finished jobs.

// ProbedWebhooks is how many webhooks with due wake rows and free slots
// one claim reads the due jobs of, at most: enough for c.Limit jobs from
// as many accounts, with room for webhooks whose wake row was early
// (their jobs were delivered or retried since).
func ProbedWebhooks(c ams.Claim) int { return 4 * c.Limit }

// InFlightQuery counts the deliveries in flight at $1 (the jobs leased
// until later), by webhook and account, through the partial index
// webhook_jobs_leased, which holds only leased jobs.
const InFlightQuery = `SELECT webhook_id, user_id, count(*) FROM webhook_jobs
WHERE state = 'pending' AND lease_until > 0 AND lease_until > $1 GROUP BY webhook_id, user_id`

// InFlight is the number of deliveries in flight, in every process, by
// webhook and by account.
type InFlight struct {
	Webhook, Account map[string]int
}

// ReadInFlight counts the deliveries in flight at now.
func ReadInFlight(ctx context.Context, c Conn, now time.Time) (*InFlight, error) {
	f := &InFlight{Webhook: map[string]int{}, Account: map[string]int{}}
	rows, err := c.Query(ctx, InFlightQuery, MS(now))
	if err != nil {
		return nil, fmt.Errorf("count deliveries in flight: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var hook, user string
		var n int
		if err := rows.Scan(&hook, &user, &n); err != nil {
			return nil, fmt.Errorf("count deliveries in flight: %w", err)
		}
		f.Webhook[hook] += n
		f.Account[user] += n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count deliveries in flight: %w", err)
	}
	return f, nil
}

// Free returns how many more jobs of the webhook (of account user) c lets
// a claim take. An ordered webhook has one delivery in flight at most,
// whatever c.PerWebhook says.
func (f *InFlight) Free(c ams.Claim, webhookID, user string, ordered bool) int {
	perWebhook := c.PerWebhook
	if ordered {
		perWebhook = 1
	}
	free := perWebhook - f.Webhook[webhookID]
	if c.PerAccount > 0 {
		free = min(free, c.PerAccount-f.Account[user])
	}
	return max(free, 0)
}

// Candidate is a due job a claim may take, with its next_at.
type Candidate struct {
	Job    *ams.Job
	NextAt int64
}

// Pick chooses which candidates a claim leases, at most c.Limit: each
// account's jobs oldest first (next_at, then seq) up to its free slots,
// taken round-robin across accounts — every account's oldest job before
// any account's second — so that an account with a long backlog cannot
// keep another's newer jobs waiting. The candidates of one webhook must
// not exceed its free slots (the engine reads them so).
func (f *InFlight) Pick(c ams.Claim, cands []Candidate) []*ams.Job {
	slices.SortFunc(cands, func(a, b Candidate) int {
		return cmp.Or(cmp.Compare(a.NextAt, b.NextAt), cmp.Compare(a.Job.Seq, b.Job.Seq))
	})
	type ranked struct {
		Candidate
		rank int
	}
	taken := map[string]int{}
	var picks []ranked
	for _, cand := range cands {
		user := cand.Job.UserID
		if c.PerAccount > 0 && f.Account[user]+taken[user] >= c.PerAccount {
			continue
		}
		taken[user]++
		picks = append(picks, ranked{cand, taken[user]})
	}
	slices.SortStableFunc(picks, func(a, b ranked) int { return cmp.Compare(a.rank, b.rank) })
	jobs := make([]*ams.Job, 0, min(len(picks), c.Limit))
	for _, p := range picks[:min(len(picks), c.Limit)] {
		jobs = append(jobs, p.Job)
	}
	return jobs
}
