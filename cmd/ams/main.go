// Command ams is the Assistant Messaging Service: `ams serve` runs the API,
// and the other subcommands bootstrap accounts, keys and assistants from a
// shell, on the same store, also while a server runs.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/amsdev/ams"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func main() {
	if cmd, err := newRoot().ExecuteC(); err != nil {
		fmt.Fprintln(os.Stderr, "ams:", describe(cmd, err))
		os.Exit(1)
	}
}

// describe returns the text of err for the command line: an *ams.Error
// as its message alone (not "ams <code>: ..."), with the parameter it
// names written as the flag of cmd that sets it ("--redirect-uri", not
// "redirect_uris"), when cmd has one.
func describe(cmd *cobra.Command, err error) string {
	var e *ams.Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	msg := e.Message
	if e.Param == "" || cmd == nil {
		return msg
	}
	name := strings.TrimPrefix(cliFlags[e.Param], "--")
	if name == "" {
		name = strings.ReplaceAll(e.Param, "_", "-")
	}
	if cmd.Flags().Lookup(name) == nil {
		return msg
	}
	flag := "--" + name
	if quoted := "'" + e.Param + "'"; strings.Contains(msg, quoted) {
		return strings.ReplaceAll(msg, quoted, flag)
	}
	return msg + " (" + flag + ")"
}

// storeFlags are the flags every subcommand takes to find the store.
type storeFlags struct {
	dataDir     string
	databaseURL string
	secretKey   string
	// create is set by the commands that may make a new SQLite store
	// (serve, migrate, users create, import); the others refuse a
	// --data-dir without one, so that a mistyped directory is an error
	// rather than a new, empty store.
	create bool
	// statementTimeout is PostgreSQL's statement_timeout (set by serve's
	// --database-statement-timeout; 0: the server's).
	statementTimeout time.Duration
}

func newRoot() *cobra.Command {
	sf := &storeFlags{}
	root := &cobra.Command{
		Use:           "ams",
		Short:         "ams, the Assistant Messaging Service",
		Long:          "ams runs the Assistant Messaging Service API (ams serve) and manages its accounts, API keys and assistants.\nEvery flag can also be set with an AMS_* environment variable: --data-dir is AMS_DATA_DIR.",
		Version:       ams.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return bindEnv(cmd)
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return flagParseError(cmd, err) })
	pf := root.PersistentFlags()
	pf.StringVar(&sf.dataDir, "data-dir", "./ams-data", "directory of the embedded SQLite store and the e-mail outbox (env AMS_DATA_DIR)")
	pf.StringVar(&sf.databaseURL, "database-url", "", "PostgreSQL URL (postgres://...); empty uses SQLite under --data-dir (env AMS_DATABASE_URL)")
	pf.StringVar(&sf.secretKey, "secret-key", "", "base64 32-byte key sealing webhook secrets and signing OAuth tokens; required with --database-url, the same in every process (env AMS_SECRET_KEY; SQLite default: key files in --data-dir)")
	root.AddCommand(newServeCmd(sf), newUsersCmd(sf), newKeysCmd(sf), newAssistantsCmd(sf), newVersionCmd())
	root.AddCommand(newOAuthClientsCmd(sf), newMigrateCmd(sf), newExportCmd(sf), newImportCmd(sf), newWebhooksCmd(sf), newListenCmd(), newTriggerCmd())
	return root
}

// bindEnv sets every flag not given on the command line from its AMS_*
// variable (AMS_ plus the flag name in upper case, dashes as underscores).
func bindEnv(cmd *cobra.Command) error {
	var errs []error
	visit := func(f *pflag.Flag) {
		if f.Changed {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, badValue(f, v, envName(f.Name)+" (--"+f.Name+")", err))
			}
			f.Changed = true
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	return errors.Join(errs...)
}

// badValue words the error of a value v that flag f refused, set from
// src (the flag itself, or its variable): what was expected, in words.
func badValue(f *pflag.Flag, v, src string, err error) error {
	var want string
	switch f.Value.Type() {
	case "bool":
		want = "true or false (or 1 or 0)"
	case "duration":
		want = "a duration such as 30s, 5m or 2h"
	case "int", "int64", "int32":
		want = "a whole number"
	case "uint", "uint64", "uint32":
		want = "a whole number, 0 or more"
	case "float64", "float32":
		want = "a number"
	default:
		return fmt.Errorf("%s: %q: %w", src, v, err)
	}
	return fmt.Errorf("%s must be %s, not %q", src, want, v)
}

// flagArgument matches pflag's error for a value a flag refuses.
var flagArgument = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-\w, )?--([\w-]+)" flag`)

// flagParseError words the command line's flag errors as badValue does;
// others (an unknown flag) are pflag's own.
func flagParseError(cmd *cobra.Command, err error) error {
	m := flagArgument.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	f := cmd.Flags().Lookup(m[2])
	if f == nil {
		return err
	}
	return badValue(f, m[1], "--"+f.Name, err)
}

func envName(flag string) string {
	return "AMS_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// signalContext is set by serve; other commands use a plain context.
func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
