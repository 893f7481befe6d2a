package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/account"
	"github.com/spf13/cobra"
)

func newUsersCmd(sf *storeFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "users", Short: "Create and update accounts"}
	var email, plan, tz string
	var pwStdin, admin, waitlist bool
	create := &cobra.Command{
		Use:   "create --email E [--plan standard|professional|enterprise] [--password-stdin] [--admin] [--waitlist]",
		Short: "Create an account; prints its user id",
		Long: `Create an account; prints its user id.

The account has API access at once (it is approved), unless --waitlist puts
it on the early-access waitlist, as accounts made on the sign-up page are;
` + "`ams users approve`" + ` lets it off. --admin makes it an administrator of
the service (the waitlist page of the account pages).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmdContext(cmd)
			p, err := ams.ParsePlan(plan)
			if err != nil {
				return err
			}
			in := account.NewUser{Email: email, Timezone: tz, Plan: p, Approved: !waitlist, Admin: admin}
			if pwStdin {
				if in.Password, err = readPassword(cmd.InOrStdin()); err != nil {
					return err
				}
			}
			sf.create = true
			return withStore(ctx, sf, func(store ams.Store) error {
				u, err := (&account.Service{Store: store}).CreateUser(ctx, in)
				if err != nil {
					return flagError(err)
				}
				fmt.Fprintln(cmd.OutOrStdout(), u.ID)
				return nil
			})
		},
	}
	create.Flags().StringVar(&email, "email", "", "the account's e-mail address (required)")
	create.Flags().StringVar(&plan, "plan", "standard", "standard, professional or enterprise")
	create.Flags().StringVar(&tz, "timezone", "UTC", "IANA time zone of the account")
	create.Flags().BoolVar(&pwStdin, "password-stdin", false, "read a password (for the account pages) from standard input")
	create.Flags().BoolVar(&admin, "admin", false, "make the account an administrator of the service")
	create.Flags().BoolVar(&waitlist, "waitlist", false, "put the account on the early-access waitlist (no API keys until ams users approve lets it off)")
	create.MarkFlagRequired("email")

	var uEmail, uPlan, uTZ string
	var rpm, rpd, maxWebhooks int
	var uPwStdin bool
	update := &cobra.Command{
		Use:   "update --email E [--plan P] [--rpm N] [--rpd N] [--max-webhooks N] [--timezone TZ] [--password-stdin]",
		Short: "Change an account's plan, enterprise limits, time zone or password",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmdContext(cmd)
			var upd ams.UserUpdate
			f := cmd.Flags()
			if f.Changed("plan") {
				p, err := ams.ParsePlan(uPlan)
				if err != nil {
					return err
				}
				upd.Plan = &p
			}
			if f.Changed("rpm") {
				if rpm < 0 {
					return fmt.Errorf("--rpm must be 0 (plan default) or more")
				}
				upd.RPM = &rpm
			}
			if f.Changed("rpd") {
				if rpd < 0 {
					return fmt.Errorf("--rpd must be 0 (plan default) or more")
				}
				upd.RPD = &rpd
			}
			if f.Changed("max-webhooks") {
				if maxWebhooks < 0 {
					return fmt.Errorf("--max-webhooks must be 0 (the server's --max-webhooks-per-account) or more")
				}
				upd.MaxWebhooks = &maxWebhooks
			}
			if f.Changed("timezone") {
				if _, err := time.LoadLocation(uTZ); err != nil {
					return fmt.Errorf("--timezone: unknown time zone %q (an IANA name such as Europe/Paris)", uTZ)
				}
				upd.Timezone = &uTZ
			}
			if uPwStdin {
				pw, err := readPassword(cmd.InOrStdin())
				if err != nil {
					return err
				}
				h, err := (&account.Service{}).HashPassword(pw)
				if err != nil {
					return flagError(err)
				}
				upd.PasswordHash = &h
			}
			return withStore(ctx, sf, func(store ams.Store) error {
				u, err := store.FindUserByEmail(ctx, uEmail)
				if err != nil {
					return err
				}
				if (upd.RPM != nil || upd.RPD != nil) && planAfter(u, upd) != ams.PlanEnterprise {
					return fmt.Errorf("--rpm and --rpd apply to enterprise accounts only (this one is %s)", planAfter(u, upd))
				}
				if upd.MaxWebhooks != nil && *upd.MaxWebhooks > 0 && planAfter(u, upd) != ams.PlanEnterprise {
					return fmt.Errorf("--max-webhooks applies to enterprise accounts only (this one is %s)", planAfter(u, upd))
				}
				u, err = store.UpdateUser(ctx, u.ID, upd, ams.Clock(nil).Now())
				if err != nil {
					return err
				}
				l := u.Limits()
				fmt.Fprintf(cmd.OutOrStdout(), "%s plan=%s rpm=%d rpd=%d timezone=%s", u.ID, u.Plan, l.PerMinute, l.PerDay, u.Timezone)
				if n := u.WebhookLimit(0); n > 0 {
					fmt.Fprintf(cmd.OutOrStdout(), " max_webhooks=%d", n)
				}
				fmt.Fprintln(cmd.OutOrStdout())
				return nil
			})
		},
	}
	update.Flags().StringVar(&uEmail, "email", "", "the account's e-mail address (required)")
	update.Flags().StringVar(&uPlan, "plan", "", "standard, professional or enterprise")
	update.Flags().IntVar(&rpm, "rpm", 0, "enterprise requests per minute (0: default)")
	update.Flags().IntVar(&rpd, "rpd", 0, "enterprise requests per day (0: default)")
	update.Flags().IntVar(&maxWebhooks, "max-webhooks", 0, "enterprise: webhooks the account may have (0: the server's --max-webhooks-per-account)")
	update.Flags().StringVar(&uTZ, "timezone", "", "IANA time zone of the account")
	update.Flags().BoolVar(&uPwStdin, "password-stdin", false, "read a new password from standard input")
	update.MarkFlagRequired("email")

	var aEmail string
	approve := &cobra.Command{
		Use:   "approve --email E",
		Short: "Let an account off the early-access waitlist: it may create API keys",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmdContext(cmd)
			return withStore(ctx, sf, func(store ams.Store) error {
				u, err := store.FindUserByEmail(ctx, aEmail)
				if err != nil {
					return err
				}
				u, approved, err := (&account.Service{Store: store}).Approve(ctx, u.ID)
				if err != nil {
					return err
				}
				if !approved {
					fmt.Fprintf(cmd.OutOrStdout(), "%s (%s) was already approved at %s\n", u.ID, u.Email, u.ApprovedAt.Format(time.RFC3339))
					return nil
				}
				fmt.Fprintf(cmd.OutOrStdout(), "approved %s (%s) at %s\n", u.ID, u.Email, u.ApprovedAt.Format(time.RFC3339))
				return nil
			})
		},
	}
	approve.Flags().StringVar(&aEmail, "email", "", "the account's e-mail address (required)")
	approve.MarkFlagRequired("email")
	list := &cobra.Command{
		Use:   "list",
		Short: "List every account, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmdContext(cmd)
			return withStore(ctx, sf, func(store ams.Store) error {
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tEMAIL\tPLAN\tSTATUS\tADMIN\tCREATED")
				for after := ""; ; {
					us, more, err := store.ListUsers(ctx, after, 500)
					if err != nil {
						return err
					}
					for _, u := range us {
						status := "approved"
						if u.ApprovedAt == nil {
							status = "waitlist"
						}
						admin := ""
						if u.Admin {
							admin = "yes"
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", u.ID, u.Email, u.Plan, status, admin, u.CreatedAt.Format(time.RFC3339))
					}
					if !more {
						break
					}
					after = us[len(us)-1].ID
				}
				return tw.Flush()
			})
		},
	}

	cmd.AddCommand(create, update, approve, list)
	return cmd
}

func planAfter(u *ams.User, upd ams.UserUpdate) ams.Plan {
	if upd.Plan != nil {
		return *upd.Plan
	}
	return u.Plan
}

// readPassword reads a password from the first line of r. An empty one
// is refused: --password-stdin sets a password.
func readPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("read password: %w", err)
	}
	pw := strings.TrimRight(line, "\r\n")
	if err := account.CheckPassword(pw); err != nil {
		return "", flagError(err)
	}
	return pw, nil
}

// cliFlags are the flags of the services' parameters whose flag is not
// the parameter's name (flagError, and describe in main.go, use them).
var cliFlags = map[string]string{
	"email": "--email", "password": "--password-stdin", "timezone": "--timezone", "plan": "--plan",
	"name": "--name", "permissions": "--permissions", "expires_at": "--expires-in", "redirect_uris": "--redirect-uri",
}

// flagError words the field errors of the account service after the
// flags they are about ("--email: Enter an e-mail address like
// name@example.com."), all of them; other errors are returned as they are.
func flagError(err error) error {
	errs := ams.Fields(err)
	var e *ams.Error
	if errs == nil && errors.As(err, &e) && e.Param != "" {
		errs = []*ams.Error{e} // a taken e-mail address
	}
	if errs == nil {
		return err
	}
	var msgs []string
	for _, e := range errs {
		name := cliFlags[e.Param]
		if name == "" {
			name = e.Param
		}
		msgs = append(msgs, name+": "+e.Message)
	}
	return errors.New(strings.Join(msgs, "; "))
}

func newKeysCmd(sf *storeFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "keys", Short: "Create, list and revoke API keys"}
	var email, name, perms string
	var expiresIn time.Duration
	create := &cobra.Command{
		Use:   "create --email E --name N --permissions read,messages",
		Short: "Create an API key; prints the key, once, and nothing else on stdout",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmdContext(cmd)
			return withStore(ctx, sf, func(store ams.Store) error {
				u, err := store.FindUserByEmail(ctx, email)
				if err != nil {
					return err
				}
				svc := &account.Service{Store: store}
				var exp *time.Time
				if expiresIn > 0 {
					t := svc.Clock.Now().Add(expiresIn)
					exp = &t
				}
				secret, k, err := svc.CreateKey(ctx, u.ID, account.NewKey{Name: name, Permissions: []string{perms}, ExpiresAt: exp})
				if ams.ErrorKindOf(err) == ams.EFORBIDDEN {
					return fmt.Errorf("%s is on the early-access waitlist: approve it first with `ams users approve --email %s`", u.Email, u.Email)
				} else if err != nil {
					return flagError(err)
				}
				fmt.Fprintln(cmd.ErrOrStderr(), "created", k.ID, "for", u.Email, "with", k.Permissions.String(), "- store the key now, it is not shown again")
				fmt.Fprintln(cmd.OutOrStdout(), secret)
				return nil
			})
		},
	}
	create.Flags().StringVar(&email, "email", "", "the account's e-mail address (required)")
	create.Flags().StringVar(&name, "name", "", "a name to recognise the key by (required)")
	create.Flags().StringVar(&perms, "permissions", "", "comma-separated: read, write, admin, messages, integrations (required)")
	create.Flags().DurationVar(&expiresIn, "expires-in", 0, "expire the key after this long (e.g. 2160h for 90 days); 0: never")
	for _, f := range []string{"email", "name", "permissions"} {
		create.MarkFlagRequired(f)
	}

	var lEmail string
	listCmd := &cobra.Command{
		Use:   "list --email E",
		Short: "List an account's API keys (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmdContext(cmd)
			return withStore(ctx, sf, func(store ams.Store) error {
				u, err := store.FindUserByEmail(ctx, lEmail)
				if err != nil {
					return err
				}
				keys, err := store.ListKeys(ctx, u.ID)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tNAME\tKEY\tPERMISSIONS\tCREATED\tLAST USED\tSTATUS")
				now := ams.Clock(nil).Now()
				for _, k := range keys {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Hint, k.Permissions, k.CreatedAt.Format(time.RFC3339),
						fmtTime(k.LastUsedAt), keyStatus(k, now))
				}
				return tw.Flush()
			})
		},
	}
	listCmd.Flags().StringVar(&lEmail, "email", "", "the account's e-mail address (required)")
	listCmd.MarkFlagRequired("email")

	revoke := &cobra.Command{
		Use:   "revoke KEY_ID",
		Short: "Revoke an API key; it is refused from its next request on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmdContext(cmd)
			return withStore(ctx, sf, func(store ams.Store) error {
				k, err := (&account.Service{Store: store}).RevokeKey(ctx, "", args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked %s (%s) at %s\n", k.ID, k.Name, k.RevokedAt.Format(time.RFC3339))
				return nil
			})
		},
	}
	cmd.AddCommand(create, listCmd, revoke)
	return cmd
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.Format(time.RFC3339)
}

func keyStatus(k *ams.APIKey, now time.Time) string {
	switch {
	case k.RevokedAt != nil:
		return "revoked"
	case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
		return "expired"
	case now.Sub(k.CreatedAt) > 90*24*time.Hour:
		return "active (older than 90 days: rotate it)"
	}
	return "active"
}

func newAssistantsCmd(sf *storeFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "assistants", Short: "Create and list assistants"}
	var email, name, desc, instr, model string
	create := &cobra.Command{
		Use:   "create --email E --name N",
		Short: "Create an assistant; prints its id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmdContext(cmd)
			if strings.TrimSpace(name) == "" || len(name) > 100 {
				return fmt.Errorf("--name must be 1 to 100 characters")
			}
			if !ams.ValidModelName(model) {
				return fmt.Errorf("--model %q: a model name is 1 to %d letters, digits and . _ : / - (%q is the built-in engine; others run on the --llm-base-url server of ams serve)", model, ams.MaxModelName, ams.ModelBuiltin)
			}
			return withStore(ctx, sf, func(store ams.Store) error {
				u, err := store.FindUserByEmail(ctx, email)
				if err != nil {
					return err
				}
				a := newAssistant(u.ID, name, desc, instr, model)
				if err := store.CreateAssistant(ctx, a); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), a.ID)
				return nil
			})
		},
	}
	create.Flags().StringVar(&email, "email", "", "the account's e-mail address (required)")
	create.Flags().StringVar(&name, "name", "", "the assistant's name (required)")
	create.Flags().StringVar(&desc, "description", "", "what the assistant is for")
	create.Flags().StringVar(&instr, "instructions", "", "instructions that guide its replies")
	create.Flags().StringVar(&model, "model", ams.ModelBuiltin, "the engine that runs it: builtin, or a model of the --llm-base-url server")
	create.MarkFlagRequired("email")
	create.MarkFlagRequired("name")
	cmd.AddCommand(create, newAssistantsListCmd(sf))
	return cmd
}

func newAssistant(userID, name, desc, instr, model string) *ams.Assistant {
	now := ams.Clock(nil).Now()
	return &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), Object: "assistant", UserID: userID, Name: name,
		Description: desc, Instructions: instr, Model: model, CreatedAt: now, UpdatedAt: now}
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), "ams", ams.Version) },
	}
}
