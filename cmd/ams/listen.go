package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/client"
	"github.com/amsdev/ams/ssrf"
	"github.com/amsdev/ams/webhook"
	"github.com/spf13/cobra"
)

// remoteFlags are the flags of the commands that call a running ams over
// HTTP (listen, trigger) rather than open its store.
type remoteFlags struct {
	baseURL string
	apiKey  string
}

func (rf *remoteFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&rf.baseURL, "base-url", "http://127.0.0.1:8080", "URL of the ams to call (env AMS_BASE_URL)")
	cmd.Flags().StringVar(&rf.apiKey, "api-key", "", "API key of the account (env AMS_API_KEY; required)")
}

// client checks the flags and returns a client of the ams they name.
func (rf *remoteFlags) client(opts ...client.Option) (*client.Client, error) {
	if err := checkHTTPURL("--base-url", rf.baseURL); err != nil {
		return nil, err
	}
	if rf.apiKey == "" {
		return nil, errors.New("--api-key (or AMS_API_KEY) is required: an API key of the account, such as the one ams serve --dev prints")
	}
	return client.New(rf.baseURL, rf.apiKey, append([]client.Option{client.WithUserAgent("ams-cli/" + ams.Version)}, opts...)...), nil
}

// checkHTTPURL refuses a value of flag that is not an absolute http(s) URL.
func checkHTTPURL(flag, v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s must be an http:// or https:// URL such as http://127.0.0.1:8080, not %q", flag, v)
	}
	return nil
}

// listenSecret is the signing secret of ams listen for apiKey: derived
// from the key, so that every run with the same key prints (and signs
// with) the same secret and the receiver's configuration outlives a
// restart; the key cannot be found from it.
func listenSecret(apiKey string) string {
	m := hmac.New(sha256.New, []byte(apiKey))
	m.Write([]byte("ams listen signing secret v1"))
	return "whsec_" + base64.StdEncoding.EncodeToString(m.Sum(nil)[:24])
}

// forwardTimeout bounds one forwarded request, as a delivery's is bounded.
const forwardTimeout = webhook.Timeout

func newListenCmd() *cobra.Command {
	rf := &remoteFlags{}
	var forwardTo, typ, secret, after string
	cmd := &cobra.Command{
		Use:   "listen --forward-to URL [--api-key KEY] [--base-url URL]",
		Short: "Forward the account's events, live and signed, to a local URL",
		Long: `Read the account's events live from a running ams (GET /v1/events/stream)
and POST each to --forward-to, signed as webhook deliveries are: the
Standard Webhooks headers webhook-id, webhook-timestamp and
webhook-signature, and X-Service-Signature and X-Service-Event. So a
receiver under development on a laptop gets the events without a tunnel.

The signing secret (whsec_...) is printed at start; it is derived from the
API key, so it is the same at every run with the same key (--signing-secret sets
another). A dropped connection is resumed after the last event received,
none skipped or repeated. Each forwarded event is printed with the
receiver's status; a receiver that fails is not retried (ams trigger TYPE,
or GET /v1/events, gives events again). Stop with Ctrl-C.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if forwardTo == "" {
				return errors.New("--forward-to is required: the local URL that receives the events, such as http://127.0.0.1:9000/hook")
			}
			if err := checkHTTPURL("--forward-to", forwardTo); err != nil {
				return err
			}
			if typ != "" && !ams.IsEventType(typ) && typ != ams.EventWebhookPing {
				return fmt.Errorf("--type %q is no event type (one of %s)", typ, strings.Join(ams.EventTypes, ", "))
			}
			if after != "" && !ams.HasPrefixID(after, ams.PrefixEvent) {
				return fmt.Errorf("--after must be an event id (evt_...), not %q", after)
			}
			c, err := rf.client(client.WithMaxRetries(20))
			if err != nil {
				return err
			}
			if secret == "" {
				secret = listenSecret(rf.apiKey)
			}
			ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			// The operator's own destination: local addresses allowed,
			// the answer bounded as a delivery's; redirects not followed.
			hc := ssrf.Operator().Client(ssrf.Limits{Timeout: forwardTimeout, MaxBodyBytes: webhook.MaxResponseBytes})
			hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			l := &listener{forwardTo: forwardTo, secret: secret, out: cmd.OutOrStdout(), log: cmd.ErrOrStderr(), http: hc}
			fmt.Fprintf(l.log, "ams listen: your webhook signing secret is %s\n", secret)
			err = c.FollowEvents(ctx, &client.FollowEventsParams{Type: typ, LastEventID: after, OnConnect: l.connected}, l.forward)
			if ctx.Err() != nil {
				return nil // Ctrl-C
			}
			return remoteError(err)
		},
	}
	rf.add(cmd)
	f := cmd.Flags()
	f.StringVar(&forwardTo, "forward-to", "", "URL to POST each event to, such as http://127.0.0.1:9000/hook (env AMS_FORWARD_TO; required)")
	f.StringVar(&typ, "type", "", "forward only the events of this type (env AMS_TYPE)")
	f.StringVar(&secret, "signing-secret", "", "the signing secret, whsec_<base64> or any text (env AMS_SIGNING_SECRET; default: derived from the API key, printed at start)")
	f.StringVar(&after, "after", "", "start after this event id instead of with new events only (env AMS_AFTER)")
	return cmd
}

// listener forwards the events of ams listen.
type listener struct {
	forwardTo string
	secret    string
	http      *http.Client
	out, log  io.Writer
	opened    bool
}

func (l *listener) connected(last string) {
	if !l.opened {
		l.opened = true
		fmt.Fprintf(l.log, "ams listen: ready, forwarding events to %s (Ctrl-C to stop)\n", l.forwardTo)
		return
	}
	fmt.Fprintf(l.log, "ams listen: stream resumed after %s\n", last)
}

// forward POSTs one event, signed, and prints the outcome. A receiver
// that fails does not stop the listener.
func (l *listener) forward(ev *client.StreamedEvent) error {
	body := []byte(ev.Raw)
	req, err := http.NewRequest(http.MethodPost, l.forwardTo, strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	ts := time.Now().Unix()
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "ams-listen/"+ams.Version)
	h.Set("X-Service-Signature", webhook.Signature(l.secret, body))
	h.Set("X-Service-Event", ev.Type)
	h.Set("Webhook-Id", ev.ID)
	h.Set("Webhook-Timestamp", strconv.FormatInt(ts, 10))
	h.Set("Webhook-Signature", webhook.StandardSignature(l.secret, ev.ID, ts, body))
	stamp := ev.CreatedAt.UTC().Format(time.RFC3339)
	resp, err := l.http.Do(req)
	if err != nil {
		fmt.Fprintf(l.out, "%s  %-28s %s  -> failed: %v\n", stamp, ev.Type, ev.ID, unwrapURLError(err))
		return nil
	}
	io.Copy(io.Discard, resp.Body) // bounded by the client
	resp.Body.Close()
	fmt.Fprintf(l.out, "%s  %-28s %s  -> %d\n", stamp, ev.Type, ev.ID, resp.StatusCode)
	return nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func newTriggerCmd() *cobra.Command {
	rf := &remoteFlags{}
	cmd := &cobra.Command{
		Use:   "trigger TYPE [--api-key KEY] [--base-url URL]",
		Short: "Emit a test event of TYPE (POST /v1/events/trigger); prints its id",
		Long: `Emit a test event of type TYPE (such as task.created) on a running ams
(POST /v1/events/trigger): it is listed at GET /v1/events, streamed to
ams listen and delivered to the webhooks that subscribe to TYPE, like any
event of its type, with a made-up record of the type as data and
"test": true in the envelope. Prints the event's id.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			typ := args[0]
			if !ams.IsEventType(typ) {
				return fmt.Errorf("TYPE %q is no event type (one of %s)", typ, strings.Join(ams.EventTypes, ", "))
			}
			c, err := rf.client()
			if err != nil {
				return err
			}
			ev, err := c.TriggerEvent(cmdContext(cmd), typ)
			if err != nil {
				return remoteError(err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), ev.ID)
			return nil
		},
	}
	rf.add(cmd)
	return cmd
}

// remoteError words an error answer of the API for the command line: its
// message (and request id), not the SDK's prefix.
func remoteError(err error) error {
	var e *client.Error
	if errors.As(err, &e) && e.Message != "" {
		if e.StatusCode == http.StatusUnauthorized {
			return fmt.Errorf("%s (check --api-key or AMS_API_KEY)", e.Message)
		}
		return errors.New(e.Message)
	}
	return err
}
