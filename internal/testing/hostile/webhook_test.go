package hostile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/amstest"
	"github.com/amsdev/ams/internal/testing/hostile"
)

// deliveries is the number of deliveries of each case: as many as one
// webhook has in flight.
const deliveries = 8

// webhookCase is a receiver's behaviour and what it must lead to.
type webhookCase struct {
	name string
	act  hostile.Act
	// budget bounds the bytes allocated by the deliveries, all of
	// them.
	budget int64
	// want is in the error of every delivery ("" for a success).
	want string
	// excerpt starts the recorded body of a successful delivery.
	excerpt string
	// timeout is the worker's bound on a delivery: short for the
	// receivers that a time bound stops; the others get the production
	// one, which they must not reach.
	timeout time.Duration
}

// TestWebhookReceiver delivers events through the store (a message sent
// through the API queues message.created; the webhook worker delivers it)
// to receivers that answer as an attacker would, and checks that each
// delivery is recorded with its failure (or its excerpt) while the
// memory of the deliveries stays bounded. Finding H2: a receiver
// answering with 10 MB of headers cost ams that much per delivery in
// flight.
func TestWebhookReceiver(t *testing.T) {
	plain := []byte("All work and no play makes Jack a dull boy. ")
	cases := []webhookCase{
		{name: "huge headers", act: hostile.HugeHeaders(200), budget: 8 << 20,
			want: "its headers exceed the limit of 64 KiB"},
		{name: "endless body", act: hostile.EndlessBody(200, "text/plain", nil, plain), budget: 4 << 20,
			excerpt: "All work and no play"},
		{name: "gzip bomb", act: hostile.GzipBomb(200, "text/plain", hostile.NewBomb(nil, plain)), budget: 4 << 20,
			excerpt: "All work and no play"},
		{name: "trickled headers", act: hostile.TrickleHeaders(200, 20*time.Millisecond), budget: 4 << 20,
			want: "timeout: no answer within 300ms", timeout: 300 * time.Millisecond},
		{name: "hang", act: hostile.Hang(), budget: 4 << 20, want: "timeout: no answer within 300ms", timeout: 300 * time.Millisecond},
		{name: "not HTTP", act: hostile.Garbage(), budget: 4 << 20, want: "malformed HTTP"},
	}
	onEngines(t, func(t *testing.T, opts ...amstest.Option) {
		testWebhookReceiver(t, amstest.New(t, opts...), cases)
	})
}

func testWebhookReceiver(t *testing.T, f *amstest.Fixture, cases []webhookCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.Worker.Timeout = tc.timeout // 0: webhook.Timeout
			peer := hostile.NewHTTP(t, hostile.Always(tc.act))
			r := f.Do("POST", "/v1/webhooks", f.Key, fmt.Sprintf(`{"url":%q,"events":["message.created"],"secret":"a-very-secret-signing-key"}`, peer.URL+"/hook"))
			if r.Status != 201 {
				t.Fatalf("create webhook: %d %s", r.Status, r.Body)
			}
			wh := r.JSON(t)["id"].(string)
			// The next case's events are not this webhook's.
			defer f.Do("DELETE", "/v1/webhooks/"+wh, f.Key, "")
			for i := range deliveries / 2 { // the message and its reply: two message.created
				r := f.Do("POST", "/v1/messages", f.Key, fmt.Sprintf(`{"assistant_id":%q,"message":"hello %d"}`, f.Assistant.ID, i))
				if r.Status != 201 {
					t.Fatalf("send: %d %s", r.Status, r.Body)
				}
			}

			m := hostile.Measure()
			n, err := f.Worker.RunOnce(context.Background())
			used := m.Allocated()
			if err != nil || n != deliveries {
				t.Fatalf("RunOnce: %d deliveries, %v", n, err)
			}
			t.Logf("%d deliveries allocated %s; the receiver sent %s", deliveries, hostile.MiB(used), hostile.MiB(peer.Sent()))
			if used > tc.budget {
				t.Errorf("%d deliveries allocated %s, more than %s: the receiver's answers are not bounded (it sent %s)",
					deliveries, hostile.MiB(used), hostile.MiB(tc.budget), hostile.MiB(peer.Sent()))
			}

			// What the account's owner sees: the delivery log.
			list := f.Do("GET", "/v1/webhooks/"+wh+"/deliveries?limit=100", f.Key, "").JSON(t)["data"].([]any)
			if len(list) != deliveries {
				t.Fatalf("%d deliveries recorded, want %d", len(list), deliveries)
			}
			for _, it := range list {
				d := it.(map[string]any)
				if tc.want != "" {
					msg, _ := d["error"].(string)
					if d["success"] != false || !strings.Contains(msg, tc.want) {
						t.Fatalf("delivery: success %v, error %q; want a failure saying %q", d["success"], msg, tc.want)
					}
					continue
				}
				body, _ := d["response_body"].(string)
				if d["success"] != true || !strings.HasPrefix(body, tc.excerpt) || len(body) > ams.MaxResponseExcerpt {
					t.Fatalf("delivery: success %v, response body of %d bytes %.40q", d["success"], len(body), body)
				}
			}
		})
	}
}
