package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/pgtest"
)

// BenchmarkFanOut measures Emit of one task.created event into an
// account with 10 webhooks subscribed to it (issue 31, point 6): without
// filters (10 jobs an event: what every account had before filters),
// each filtered on one of 10 assistants (1 job an event: the 9 others
// are left out in the fan-out statement), and all filtered on the
// event's assistant and a metadata pair (10 jobs: the filters' cost).
func BenchmarkFanOut(b *testing.B) {
	for _, name := range []string{
		"unfiltered",
		"filtered_one_matches",
		"filtered_all_match",
	} {
		b.Run(name, func(b *testing.B) {
			s := pgtest.Open(b)
			ctx := context.Background()
			t0 := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
			u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: "x@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: t0, UpdatedAt: t0}
			if err := s.CreateUser(ctx, u); err != nil {
				b.Fatal(err)
			}
			var assistants []string
			for range 10 {
				assistants = append(assistants, ams.NewID(ams.PrefixAssistant))
			}
			for i := range 10 {
				w := &ams.Webhook{ID: ams.NewID(ams.PrefixWebhook), UserID: u.ID, URL: "https://example.com/", Events: []string{ams.EventTaskCreated},
					Active: true, Status: ams.WebhookActive, Secret: "0123456789abcdef", CreatedAt: t0, UpdatedAt: t0}
				switch name {
				case "filtered_one_matches":
					w.Filter = ams.WebhookFilter{AssistantID: assistants[i]}
				case "filtered_all_match":
					w.Filter = ams.WebhookFilter{AssistantID: assistants[0], Metadata: map[string]string{"team": "blue"}}
				}
				if err := s.CreateWebhook(ctx, w); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				task := &ams.Task{ID: ams.NewID(ams.PrefixTask), Object: "task", UserID: u.ID, AssistantID: assistants[0], Title: "t",
					Status: ams.TaskOpen, Metadata: ams.Metadata{"team": "blue"}, CreatedAt: t0, UpdatedAt: t0}
				if err := s.Emit(ctx, ams.TaskEvent(ams.EventTaskCreated, task, t0)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
