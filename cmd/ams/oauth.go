package main

import (
	"fmt"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/oauth"
	"github.com/spf13/cobra"
)

func newOAuthClientsCmd(sf *storeFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "oauth-clients", Short: "Register, list and delete OAuth 2.0 clients"}
	var email, name string
	var uris []string
	var public bool
	create := &cobra.Command{
		Use:   "create --email E --name N --redirect-uri U [--redirect-uri U2] [--public]",
		Short: "Register an OAuth client; prints client_id and, unless --public, client_secret (shown once)",
		Long: `Register an OAuth 2.0 client of the account with the e-mail address E.

It prints two lines on stdout, "client_id cli_..." and, for a confidential
client, "client_secret ams_cs_...". The secret is stored hashed and is not
shown again. A --public client (a browser or mobile app) has no secret and
must use PKCE (S256). Redirect URIs are matched exactly; they must be https,
or http on localhost or a loopback address.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmdContext(cmd)
			return withStore(ctx, sf, func(store ams.Store) error {
				u, err := store.FindUserByEmail(ctx, email)
				if err != nil {
					return err
				}
				c, secret, err := oauth.CreateClient(ctx, store, oauth.ClientParams{
					UserID: u.ID, Name: name, RedirectURIs: uris, Public: public,
				}, ams.Clock(nil).Now())
				if err != nil {
					return err
				}
				kind := "confidential"
				if c.Public {
					kind = "public"
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "registered %s client %q for %s", kind, c.Name, u.Email)
				if secret != "" {
					fmt.Fprint(cmd.ErrOrStderr(), " - store the secret now, it is not shown again")
				}
				fmt.Fprintln(cmd.ErrOrStderr())
				fmt.Fprintln(cmd.OutOrStdout(), "client_id", c.ID)
				if secret != "" {
					fmt.Fprintln(cmd.OutOrStdout(), "client_secret", secret)
				}
				return nil
			})
		},
	}
	create.Flags().StringVar(&email, "email", "", "e-mail address of the account that owns the client (required)")
	create.Flags().StringVar(&name, "name", "", "the client's name, shown on the consent page (required)")
	create.Flags().StringArrayVar(&uris, "redirect-uri", nil, "a redirect URI (required; repeat for several)")
	create.Flags().BoolVar(&public, "public", false, "a public client (no secret, PKCE required)")
	for _, f := range []string{"email", "name", "redirect-uri"} {
		create.MarkFlagRequired(f)
	}
	cmd.AddCommand(create, newOAuthClientsListCmd(sf), newOAuthClientsDeleteCmd(sf))
	return cmd
}
