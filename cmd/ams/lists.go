package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/oauth"
	"github.com/amsdev/ams/webhook"
	"github.com/spf13/cobra"
)

// The list and delete commands of assistants, OAuth clients and webhooks,
// beside their create commands (admin.go, oauth.go); each works on the
// store, also while a server runs, as the API does.

// accountOf finds the account of the e-mail address of --email.
func accountOf(ctx context.Context, store ams.Store, email string) (*ams.User, error) {
	u, err := store.FindUserByEmail(ctx, email)
	if ams.IsNotFound(err) {
		return nil, fmt.Errorf("--email: no account has the e-mail address %q", email)
	}
	return u, err
}

// allPages calls fn with every page of list, oldest first.
func allPages[T any](ctx context.Context, list func(ams.ListParams) (*ams.Page[T], error), id func(T) string, fn func(T)) error {
	p := ams.ListParams{Limit: 100, Order: ams.OrderAsc}
	for {
		page, err := list(p)
		if err != nil {
			return err
		}
		for _, x := range page.Data {
			fn(x)
		}
		if !page.HasMore || len(page.Data) == 0 {
			return nil
		}
		p.After = id(page.Data[len(page.Data)-1])
	}
}

func newAssistantsListCmd(sf *storeFlags) *cobra.Command {
	var email string
	cmd := &cobra.Command{
		Use:   "list --email E",
		Short: "List an account's assistants, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmdContext(cmd)
			return withStore(ctx, sf, func(store ams.Store) error {
				u, err := accountOf(ctx, store, email)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tNAME\tMODEL\tCREATED")
				err = allPages(ctx, func(p ams.ListParams) (*ams.Page[*ams.Assistant], error) { return store.ListAssistants(ctx, u.ID, p) },
					func(a *ams.Assistant) string { return a.ID },
					func(a *ams.Assistant) {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.ID, a.Name, a.Model, a.CreatedAt.Format(time.RFC3339))
					})
				if err != nil {
					return err
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&email, "email", "", "the account's e-mail address (required)")
	cmd.MarkFlagRequired("email")
	return cmd
}

func newOAuthClientsListCmd(sf *storeFlags) *cobra.Command {
	var email string
	cmd := &cobra.Command{
		Use:   "list --email E",
		Short: "List an account's OAuth clients (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmdContext(cmd)
			return withStore(ctx, sf, func(store ams.Store) error {
				u, err := accountOf(ctx, store, email)
				if err != nil {
					return err
				}
				cs, err := store.ListOAuthClients(ctx, u.ID)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tNAME\tKIND\tREDIRECT URIS\tCREATED")
				for _, c := range cs {
					kind := "confidential"
					if c.Public {
						kind = "public"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.ID, c.Name, kind, strings.Join(c.RedirectURIs, " "), c.CreatedAt.Format(time.RFC3339))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&email, "email", "", "e-mail address of the account that owns the clients (required)")
	cmd.MarkFlagRequired("email")
	return cmd
}

func newOAuthClientsDeleteCmd(sf *storeFlags) *cobra.Command {
	var email string
	cmd := &cobra.Command{
		Use:   "delete CLIENT_ID --email E",
		Short: "Delete an OAuth client; every token it holds stops working",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmdContext(cmd)
			return withStore(ctx, sf, func(store ams.Store) error {
				u, err := accountOf(ctx, store, email)
				if err != nil {
					return err
				}
				if err := oauth.DeleteClient(ctx, store, u.ID, args[0], ams.Clock(nil).Now()); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", args[0])
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&email, "email", "", "e-mail address of the account that owns the client (required)")
	cmd.MarkFlagRequired("email")
	return cmd
}

func newWebhooksCmd(sf *storeFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "webhooks", Short: "List, recover and disable an account's webhooks"}
	var lEmail string
	list := &cobra.Command{
		Use:   "list --email E",
		Short: "List an account's webhooks, oldest first (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmdContext(cmd)
			return withStore(ctx, sf, func(store ams.Store) error {
				u, err := accountOf(ctx, store, lEmail)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tURL\tEVENTS\tSTATUS\tACTIVE\tCREATED")
				err = allPages(ctx, func(p ams.ListParams) (*ams.Page[*ams.Webhook], error) { return store.ListWebhooks(ctx, u.ID, p) },
					func(w *ams.Webhook) string { return w.ID },
					func(w *ams.Webhook) {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%t\t%s\n", w.ID, w.URL, strings.Join(w.Events, ","), w.Status, w.Active, w.CreatedAt.Format(time.RFC3339))
					})
				if err != nil {
					return err
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().StringVar(&lEmail, "email", "", "the account's e-mail address (required)")
	list.MarkFlagRequired("email")

	var rEmail string
	var since, until time.Duration
	var includeEarlier bool
	recoverCmd := &cobra.Command{
		Use:   "recover WEBHOOK_ID --email E --since 24h [--until 1h]",
		Short: "Queue again the events a webhook missed (not received successfully), oldest first",
		Long: `Queue again, for the webhook, every kept event of a type it subscribes to
that it has not received successfully and that is not already pending for
it, created from --since ago until --until ago (default: now), oldest
first; as POST /v1/webhooks/{id}/recover does. Events from before the
webhook was created are left out unless --include-earlier. The webhook must be on:
turn it on in the account pages or with PATCH /v1/webhooks/{id}.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmdContext(cmd)
			if since <= 0 {
				return fmt.Errorf("--since must be a positive duration such as 24h, not %s", since)
			}
			if until < 0 || until >= since {
				return fmt.Errorf("--until must be 0 or more and less than --since (%s), not %s", since, until)
			}
			return withStore(ctx, sf, func(store ams.Store) error {
				u, err := accountOf(ctx, store, rEmail)
				if err != nil {
					return err
				}
				now := ams.Clock(nil).Now()
				from := now.Add(-since)
				var to *time.Time
				if until > 0 {
					t := now.Add(-until)
					to = &t
				}
				rec, err := (&webhook.Service{Store: ams.Narrow[webhook.Tx](store)}).Recover(ctx, u.ID, args[0], &from, to, includeEarlier)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "queued %d events for %s (created %s to %s)\n", rec.Queued, rec.WebhookID,
					rec.Since.Format(time.RFC3339), rec.Until.Format(time.RFC3339))
				return nil
			})
		},
	}
	recoverCmd.Flags().StringVar(&rEmail, "email", "", "the account's e-mail address (required)")
	recoverCmd.Flags().DurationVar(&since, "since", 0, "recover the events created since this long ago, such as 24h (required; events are kept 30 days)")
	recoverCmd.Flags().DurationVar(&until, "until", 0, "up to this long ago (default 0: now)")
	recoverCmd.Flags().BoolVar(&includeEarlier, "include-earlier", false, "also queue the events from before the webhook was created")
	recoverCmd.MarkFlagRequired("email")
	recoverCmd.MarkFlagRequired("since")

	var dEmail string
	disable := &cobra.Command{
		Use:   "disable WEBHOOK_ID --email E",
		Short: "Turn a webhook off: it gets nothing more, and its pending deliveries are cancelled",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmdContext(cmd)
			return withStore(ctx, sf, func(store ams.Store) error {
				u, err := accountOf(ctx, store, dEmail)
				if err != nil {
					return err
				}
				off := false
				w, err := (&webhook.Service{Store: ams.Narrow[webhook.Tx](store)}).Update(ctx, u.ID, args[0], webhook.Input{Active: &off})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "disabled %s (%s)\n", w.ID, w.URL)
				return nil
			})
		},
	}
	disable.Flags().StringVar(&dEmail, "email", "", "the account's e-mail address (required)")
	disable.MarkFlagRequired("email")
	cmd.AddCommand(list, recoverCmd, disable)
	return cmd
}
