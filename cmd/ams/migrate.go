package main

import (
	"fmt"

	"github.com/amsdev/ams"
	"github.com/spf13/cobra"
)

func newMigrateCmd(sf *storeFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending database migrations and print the schema version",
		Long: `Apply the embedded, numbered migrations that the database has not had yet,
then print the schema version. ams serve does the same at start, so this is
for deploys that migrate before they start servers. Each migration runs in its
own transaction and is recorded, so running it again changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmdContext(cmd)
			sf.create = true
			return withStore(ctx, sf, func(store ams.Store) error {
				n, err := store.SchemaVersion(ctx)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "schema version %d\n", n)
				return nil
			})
		},
	}
}
