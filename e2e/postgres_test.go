package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestServeOnPostgres runs the binary on PostgreSQL (in a schema of its
// own): migrate, serve with --dev, a message and its reply.
func TestServeOnPostgres(t *testing.T) {
	base := os.Getenv("AMS_TEST_DATABASE_URL")
	if base == "" {
		t.Skip("AMS_TEST_DATABASE_URL is not set: PostgreSQL end-to-end test skipped (.ci/run sets it)")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 6)
	rand.Read(b)
	schema := "e2e_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	url := base + sep + "search_path=" + schema
	key := make([]byte, 32)
	rand.Read(key)
	t.Setenv("AMS_DATABASE_URL", url)
	t.Setenv("AMS_SECRET_KEY", base64.StdEncoding.EncodeToString(key))
	dir := t.TempDir()
	if out := run(t, dir, "", "migrate"); out != schemaVersion(t, "postgres") {
		t.Fatalf("migrate on PostgreSQL printed %q", out)
	}
	s := startServe(t, dir)
	k := s.field(t, `API key\s+(ams_sk_\w+)`)
	asst := s.field(t, `assistant\s+(ast_\w+)`)
	st, reply := request(t, "POST", s.base+"/v1/messages", k, `{"assistant_id":"`+asst+`","message":"Hello from Postgres"}`)
	if st != 201 || reply["direction"] != "outbound" {
		t.Fatalf("message on PostgreSQL: %d %v", st, reply)
	}
	st, got := request(t, "GET", s.base+"/v1/messages/"+reply["id"].(string), k, "")
	if st != 200 || got["content"] != reply["content"] {
		t.Fatalf("read back: %d %v", st, got)
	}
	// Without the shared key the store refuses to open.
	t.Setenv("AMS_SECRET_KEY", "")
	cmd := exec.Command(amsBinary(t), "migrate")
	cmd.Env = append(os.Environ(), "AMS_DATA_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "--secret-key") {
		t.Fatalf("migrate without a key: %v %s", err, out)
	}
}
