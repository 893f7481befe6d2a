package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/sqlrow"
)

func scanClient(s scanner) (*ams.OAuthClient, error) {
	c := &ams.OAuthClient{Object: "oauth_client"}
	var uris string
	var cr, up int64
	if err := s.Scan(&c.ID, &c.UserID, &c.Name, &uris, &c.Public, &c.SecretHash, &cr, &up); err != nil {
		return nil, err
	}
	c.CreatedAt, c.UpdatedAt = fromMS(cr), fromMS(up)
	if err := json.Unmarshal([]byte(uris), &c.RedirectURIs); err != nil {
		return nil, fmt.Errorf("decode redirect uris of %s: %w", c.ID, err)
	}
	return c, nil
}

// CreateOAuthClient stores c (with its secret hash).
func (db *DB) CreateOAuthClient(ctx context.Context, c *ams.OAuthClient) error {
	uris, err := json.Marshal(c.RedirectURIs)
	if err != nil {
		return err
	}
	if _, err := db.write.ExecContext(ctx, `INSERT INTO oauth_clients (`+sqlrow.ClientCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		c.ID, c.UserID, c.Name, string(uris), c.Public, c.SecretHash, ms(c.CreatedAt), ms(c.UpdatedAt)); err != nil {
		return fmt.Errorf("insert oauth client: %w", err)
	}
	return nil
}

// FindOAuthClient returns the client; ENOTFOUND if there is none.
func (db *DB) FindOAuthClient(ctx context.Context, id string) (*ams.OAuthClient, error) {
	c, err := scanClient(db.rq.QueryRowContext(ctx, `SELECT `+sqlrow.ClientCols+` FROM oauth_clients WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ams.NotFound("oauth_client", id)
	}
	if err != nil {
		return nil, fmt.Errorf("find oauth client: %w", err)
	}
	return c, nil
}

// ListOAuthClients returns the clients a user registered, newest first.
func (db *DB) ListOAuthClients(ctx context.Context, userID string) ([]*ams.OAuthClient, error) {
	rows, err := db.rq.QueryContext(ctx, `SELECT `+sqlrow.ClientCols+` FROM oauth_clients WHERE user_id = ? ORDER BY seq DESC`, userID)
	if err != nil {
		return nil, fmt.Errorf("list oauth clients: %w", err)
	}
	defer rows.Close()
	var out []*ams.OAuthClient
	for rows.Next() {
		c, err := scanClient(rows)
		if err != nil {
			return nil, fmt.Errorf("scan oauth client: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// CreateOAuthToken stores a token's state.
func (db *DB) CreateOAuthToken(ctx context.Context, t *ams.OAuthToken) error {
	if _, err := db.write.ExecContext(ctx, `INSERT INTO oauth_tokens (kind, signature, request_id, client_id, user_id, scopes, active, data, expires_at, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, t.Kind, t.Signature, t.RequestID, t.ClientID, t.UserID, strings.Join(t.Scopes, " "),
		t.Active, t.Data, ms(t.ExpiresAt), ms(t.CreatedAt)); err != nil {
		return fmt.Errorf("insert oauth token: %w", err)
	}
	return nil
}

// GetOAuthToken returns a token's state, active or not; ENOTFOUND if none.
// It reads through the read pool: in WAL mode a read that starts after a
// commit sees it, and API requests with access tokens must not queue
// behind writes.
func (db *DB) GetOAuthToken(ctx context.Context, kind, signature string) (*ams.OAuthToken, error) {
	t := &ams.OAuthToken{Kind: kind, Signature: signature}
	var scopes string
	var exp, cr int64
	err := db.rq.QueryRowContext(ctx, `SELECT request_id, client_id, user_id, scopes, active, data, expires_at, created_at
		FROM oauth_tokens WHERE kind = ? AND signature = ?`, kind, signature).Scan(&t.RequestID, &t.ClientID, &t.UserID, &scopes, &t.Active, &t.Data, &exp, &cr)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ams.NotFound("oauth_token", "")
	}
	if err != nil {
		return nil, fmt.Errorf("find oauth token: %w", err)
	}
	t.Scopes = strings.Fields(scopes)
	t.ExpiresAt, t.CreatedAt = fromMS(exp), fromMS(cr)
	return t, nil
}

// DeactivateOAuthToken marks one token inactive.
func (db *DB) DeactivateOAuthToken(ctx context.Context, kind, signature string) error {
	if _, err := db.write.ExecContext(ctx, `UPDATE oauth_tokens SET active = 0 WHERE kind = ? AND signature = ?`, kind, signature); err != nil {
		return fmt.Errorf("deactivate oauth token: %w", err)
	}
	return nil
}

// DeleteOAuthToken removes one token.
func (db *DB) DeleteOAuthToken(ctx context.Context, kind, signature string) error {
	if _, err := db.write.ExecContext(ctx, `DELETE FROM oauth_tokens WHERE kind = ? AND signature = ?`, kind, signature); err != nil {
		return fmt.Errorf("delete oauth token: %w", err)
	}
	return nil
}

// DeactivateGrant marks every token of the kind in the grant inactive.
func (db *DB) DeactivateGrant(ctx context.Context, kind, requestID string) error {
	if _, err := db.write.ExecContext(ctx, `UPDATE oauth_tokens SET active = 0 WHERE kind = ? AND request_id = ?`, kind, requestID); err != nil {
		return fmt.Errorf("deactivate grant: %w", err)
	}
	return nil
}

// AcquireOAuthLock takes the credential lock name for owner until until,
// unless another owner's lease is live at now.
func (db *DB) AcquireOAuthLock(ctx context.Context, name, owner string, now, until time.Time) (bool, error) {
	res, err := db.write.ExecContext(ctx, `INSERT INTO oauth_locks (name, owner, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
		WHERE oauth_locks.expires_at <= ? OR oauth_locks.owner = excluded.owner`, name, owner, ms(until), ms(now))
	if err != nil {
		return false, fmt.Errorf("acquire oauth lock: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("acquire oauth lock: %w", err)
	}
	return n == 1, nil
}

// ReleaseOAuthLock gives up owner's hold of the credential lock name.
func (db *DB) ReleaseOAuthLock(ctx context.Context, name, owner string) error {
	if _, err := db.write.ExecContext(ctx, `DELETE FROM oauth_locks WHERE name = ? AND owner = ?`, name, owner); err != nil {
		return fmt.Errorf("release oauth lock: %w", err)
	}
	return nil
}

// CreateLoginSession stores a browser session.
func (db *DB) CreateLoginSession(ctx context.Context, s *ams.LoginSession) error {
	if _, err := db.write.ExecContext(ctx, `INSERT INTO login_sessions (id_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)`,
		s.IDHash, s.UserID, ms(s.CreatedAt), ms(s.ExpiresAt)); err != nil {
		return fmt.Errorf("insert login session: %w", err)
	}
	return nil
}

// FindLoginSession returns an unexpired session; ENOTFOUND otherwise.
func (db *DB) FindLoginSession(ctx context.Context, idHash string, now time.Time) (*ams.LoginSession, error) {
	s := &ams.LoginSession{IDHash: idHash}
	var cr, exp int64
	err := db.rq.QueryRowContext(ctx, `SELECT user_id, created_at, expires_at FROM login_sessions WHERE id_hash = ? AND expires_at > ?`,
		idHash, ms(now)).Scan(&s.UserID, &cr, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ams.NotFound("session", "")
	}
	if err != nil {
		return nil, fmt.Errorf("find login session: %w", err)
	}
	s.CreatedAt, s.ExpiresAt = fromMS(cr), fromMS(exp)
	return s, nil
}

// DeleteLoginSession ends a session.
func (db *DB) DeleteLoginSession(ctx context.Context, idHash string) error {
	if _, err := db.write.ExecContext(ctx, `DELETE FROM login_sessions WHERE id_hash = ?`, idHash); err != nil {
		return fmt.Errorf("delete login session: %w", err)
	}
	return nil
}

// DeleteOtherLoginSessions ends the user's login sessions but keep.
func (db *DB) DeleteOtherLoginSessions(ctx context.Context, userID, keep string) error {
	if _, err := db.write.ExecContext(ctx, `DELETE FROM login_sessions WHERE user_id = ? AND id_hash != ?`, userID, keep); err != nil {
		return fmt.Errorf("delete login sessions: %w", err)
	}
	return nil
}

// SetOAuthClientSecret replaces the secret hash of the user's confidential
// client.
func (db *DB) SetOAuthClientSecret(ctx context.Context, userID, id, hash string, now time.Time) (*ams.OAuthClient, error) {
	c, err := scanClient(db.write.QueryRowContext(ctx, `UPDATE oauth_clients SET secret_hash = ?, updated_at = ?
		WHERE id = ? AND user_id = ? AND NOT public RETURNING `+sqlrow.ClientCols, hash, ms(now), id, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, clientNotUpdatable(ctx, db, userID, id)
	}
	if err != nil {
		return nil, fmt.Errorf("set oauth client secret: %w", err)
	}
	return c, nil
}

// clientNotUpdatable says why a secret update matched no row: the client
// is not the user's (ENOTFOUND) or it is public (ECONFLICT).
func clientNotUpdatable(ctx context.Context, db *DB, userID, id string) error {
	c, err := db.FindOAuthClient(ctx, id)
	if err != nil {
		return err
	}
	if c.UserID != userID {
		return ams.NotFound("oauth_client", id)
	}
	return ams.Errorf(ams.ECONFLICT, "public_client", "The client '%s' is public: it has no secret.", id)
}

// DeleteOAuthClient removes the user's client; its tokens go with it (the
// foreign key cascades).
func (db *DB) DeleteOAuthClient(ctx context.Context, userID, id string) error {
	res, err := db.write.ExecContext(ctx, `DELETE FROM oauth_clients WHERE id = ? AND user_id = ?`, id, userID)
	if err != nil {
		return fmt.Errorf("delete oauth client: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("delete oauth client: %w", err)
	} else if n == 0 {
		return ams.NotFound("oauth_client", id)
	}
	return nil
}

// ListGrants returns the clients the user holds live access or refresh
// tokens of.
func (db *DB) ListGrants(ctx context.Context, userID string, now time.Time) ([]*ams.OAuthGrant, error) {
	rows, err := db.rq.QueryContext(ctx, `SELECT t.client_id, c.name, MIN(t.created_at), MAX(t.created_at),
			COALESCE(group_concat(CASE WHEN t.active AND t.expires_at > ?1 THEN t.scopes END, ' '), '')
		FROM oauth_tokens t JOIN oauth_clients c ON c.id = t.client_id
		WHERE t.user_id = ?2 AND t.kind IN ('access', 'refresh')
		GROUP BY t.client_id, c.name
		HAVING SUM(t.active AND t.expires_at > ?1) > 0
		ORDER BY MAX(t.created_at) DESC, t.client_id`, ms(now), userID)
	if err != nil {
		return nil, fmt.Errorf("list oauth grants: %w", err)
	}
	defer rows.Close()
	var out []*ams.OAuthGrant
	for rows.Next() {
		g := &ams.OAuthGrant{}
		var first, last int64
		var scopes string
		if err := rows.Scan(&g.ClientID, &g.ClientName, &first, &last, &scopes); err != nil {
			return nil, fmt.Errorf("scan oauth grant: %w", err)
		}
		g.FirstGrantedAt, g.LastGrantedAt = fromMS(first), fromMS(last)
		g.Scopes = grantScopes(scopes)
		out = append(out, g)
	}
	return out, rows.Err()
}

// grantScopes returns the permissions named in the space-separated list,
// each once, in canonical order.
func grantScopes(list string) []string {
	words := strings.Fields(list)
	out := []string{}
	for _, p := range ams.AllPermissions {
		if slices.Contains(words, string(p)) {
			out = append(out, string(p))
		}
	}
	return out
}

// RevokeGrants deactivates the user's codes, access and refresh tokens of
// the client.
func (db *DB) RevokeGrants(ctx context.Context, userID, clientID string) error {
	res, err := db.write.ExecContext(ctx, `UPDATE oauth_tokens SET active = 0
		WHERE user_id = ? AND client_id = ? AND kind IN ('code', 'access', 'refresh') AND active`, userID, clientID)
	if err != nil {
		return fmt.Errorf("revoke oauth grants: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("revoke oauth grants: %w", err)
	} else if n == 0 {
		return ams.NotFound("oauth_grant", clientID)
	}
	return nil
}
