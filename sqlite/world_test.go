package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/testing/sqlitetest"
	"github.com/amsdev/ams/sqlite"
)

var w0 = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

// worldFixture makes a user and an assistant.
func worldFixture(t *testing.T, s ams.Store) (*ams.User, *ams.Assistant) {
	t.Helper()
	ctx := context.Background()
	u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: strings.ToLower(ams.NewID("")) + "@example.com", Plan: ams.PlanStandard, Timezone: "UTC", CreatedAt: w0, UpdatedAt: w0}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	a := &ams.Assistant{ID: ams.NewID(ams.PrefixAssistant), UserID: u.ID, Name: "a", Model: ams.ModelBuiltin, CreatedAt: w0, UpdatedAt: w0}
	if err := s.CreateAssistant(ctx, a); err != nil {
		t.Fatal(err)
	}
	return u, a
}

// Integration secrets are sealed at rest: the row holds neither the
// secret nor its JSON, and a sealed value moved to another integration
// does not open.
func TestIntegrationSecretsSealed(t *testing.T) {
	t.Parallel()
	db := open(t)
	u, _ := worldFixture(t, db)
	ctx := context.Background()
	in := &ams.Integration{ID: ams.NewID(ams.PrefixIntegration), UserID: u.ID, Provider: "caldav", Status: "connected", ConnectedAt: w0, CreatedAt: w0, UpdatedAt: w0}
	in2 := &ams.Integration{ID: ams.NewID(ams.PrefixIntegration), UserID: u.ID, Provider: "caldav", Status: "connected", ConnectedAt: w0, CreatedAt: w0, UpdatedAt: w0}
	if err := db.Update(ctx, func(tx ams.Tx) error {
		if err := tx.CreateIntegration(ctx, in, map[string]string{"password": "correct-horse-battery"}); err != nil {
			return err
		}
		return tx.CreateIntegration(ctx, in2, nil)
	}); err != nil {
		t.Fatal(err)
	}
	r, err := sql.Open("sqlite", "file:"+db.Path()+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var sealed string
	var config string
	var none sql.NullString
	if err := r.QueryRow(`SELECT secrets, config FROM integrations WHERE id = ?`, in.ID).Scan(&sealed, &config); err != nil {
		t.Fatal(err)
	}
	if sealed == "" || strings.Contains(sealed, "correct-horse") || strings.Contains(sealed, "password") || strings.Contains(config, "correct-horse") {
		t.Fatalf("secrets stored readable: %q (config %q)", sealed, config)
	}
	if err := r.QueryRow(`SELECT secrets FROM integrations WHERE id = ?`, in2.ID).Scan(&none); err != nil || none.Valid {
		t.Fatalf("secrets of an integration without: %v %v", none, err)
	}
	// Sealed to its id: copied to another integration it does not open.
	if _, err := r.Exec(`UPDATE integrations SET secrets = ? WHERE id = ?`, sealed, in2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.IntegrationSecrets(ctx, u.ID, in2.ID); err == nil {
		t.Fatal("secrets sealed for another integration opened")
	}
	if sec, err := db.IntegrationSecrets(ctx, u.ID, in.ID); err != nil || sec["password"] != "correct-horse-battery" {
		t.Fatalf("secrets: %v %v", sec, err)
	}
}

// Two stores on one file (two processes) fire reminders at once: the
// IMMEDIATE write transactions serialize them, and each fires once.
func TestFireRemindersTwoProcesses(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ams.db")
	var dbs []*sqlite.DB
	for range 2 {
		db := sqlitetest.OpenFile(t, path)
		dbs = append(dbs, db)
	}
	u, a := worldFixture(t, dbs[0])
	ctx := context.Background()
	const n = 40
	if err := dbs[0].Update(ctx, func(tx ams.Tx) error {
		for i := range n {
			remind := w0.Add(-time.Duration(i) * time.Second)
			tk := &ams.Task{ID: ams.NewID(ams.PrefixTask), UserID: u.ID, AssistantID: a.ID, Title: fmt.Sprint(i), Status: ams.TaskOpen,
				RemindAt: &remind, CreatedAt: w0, UpdatedAt: w0}
			if err := tx.CreateTask(ctx, tk); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for i := range 6 {
		db := dbs[i%2]
		wg.Go(func() {
			for {
				k, err := db.FireReminders(ctx, w0, 4)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				total += k
				mu.Unlock()
				if k == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	if total != n {
		t.Fatalf("fired %d, want %d", total, n)
	}
	pg, err := dbs[1].ListEvents(ctx, u.ID, ams.EventFilter{Type: ams.EventTaskReminder}, ams.ListParams{Limit: 100})
	if err != nil || len(pg.Data) != n {
		t.Fatalf("%d task.reminder events (%v), want %d", len(pg.Data), err, n)
	}
}
