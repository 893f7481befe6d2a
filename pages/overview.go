package pages

import (
	"context"
	"net/http"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/format"
)

// overviewData is the data of the overview page.
type overviewData struct {
	Plan       ams.Plan
	Limits     ams.Limits
	Keys       string // counts, "100+" past a page
	Assistants string
	Webhooks   string
}

// overview shows the plan and its limits, the waitlist status and what the
// account holds.
func (s *Server) overview(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	ctx := r.Context()
	d := overviewData{Plan: c.User.Plan, Limits: c.User.Limits()}
	keys, err := s.Store.ListKeys(ctx, c.User.ID)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, k := range keys {
		if keyState(k, c.Now) == "active" {
			n++
		}
	}
	d.Keys = format.Number(n)
	if d.Assistants, err = count(ctx, func(ctx context.Context, p ams.ListParams) (int, bool, error) {
		pg, err := s.Store.ListAssistants(ctx, c.User.ID, p)
		if err != nil {
			return 0, false, err
		}
		return len(pg.Data), pg.HasMore, nil
	}); err != nil {
		return nil, err
	}
	if d.Webhooks, err = count(ctx, func(ctx context.Context, p ams.ListParams) (int, bool, error) {
		pg, err := s.Store.ListWebhooks(ctx, c.User.ID, p)
		if err != nil {
			return 0, false, err
		}
		return len(pg.Data), pg.HasMore, nil
	}); err != nil {
		return nil, err
	}
	return d, nil
}

// count returns the length of the first page of 100 of a list, "100+"
// when there are more.
func count(ctx context.Context, list func(context.Context, ams.ListParams) (int, bool, error)) (string, error) {
	n, more, err := list(ctx, ams.ListParams{Limit: 100, Order: ams.OrderDesc})
	if err != nil {
		return "", err
	}
	if more {
		return format.Number(n) + "+", nil
	}
	return format.Number(n), nil
}
