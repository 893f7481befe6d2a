package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/amsdev/ams"
)

const integrationCols = `id, user_id, provider, status, config, last_error, connected_at, created_at, updated_at,
	sync_failures, next_sync_at, pending_deletion, name, mcp`

func scanIntegration(s scanner) (*ams.Integration, error) {
	in := &ams.Integration{Object: "integration"}
	var config []byte
	var conn, c, u int64
	var next *int64
	var name *string
	var mcp []byte
	if err := s.Scan(&in.ID, &in.UserID, &in.Provider, &in.Status, &config, &in.LastError, &conn, &c, &u,
		&in.SyncFailures, &next, &in.PendingDeletion, &name, &mcp); err != nil {
		return nil, err
	}
	if mcp != nil {
		in.MCPSettings = &ams.MCPSettings{}
		if err := json.Unmarshal(mcp, in.MCPSettings); err != nil {
			return nil, fmt.Errorf("decode integration mcp %s: %w", in.ID, err)
		}
		in.MCPSettings.Name = deref(name)
	}
	in.NextSyncAt = fromNullMS(next)
	in.ConnectedAt, in.CreatedAt, in.UpdatedAt = FromMS(conn), FromMS(c), FromMS(u)
	if err := json.Unmarshal(config, &in.Config); err != nil {
		return nil, fmt.Errorf("decode integration config %s: %w", in.ID, err)
	}
	if in.Config == nil {
		in.Config = map[string]any{}
	}
	return in, nil
}

// FindIntegration returns the user's integration (locked in a
// transaction); ENOTFOUND otherwise.
func (q *Queries) FindIntegration(ctx context.Context, userID, id string) (*ams.Integration, error) {
	return findOne(ctx, q, scanIntegration, "integration", id,
		`SELECT `+integrationCols+` FROM integrations WHERE id = $1 AND user_id = $2`+q.lock("FOR UPDATE"), id, userID)
}

// ListIntegrations returns a page of the user's integrations.
func (q *Queries) ListIntegrations(ctx context.Context, userID string, p ams.ListParams) (*ams.Page[*ams.Integration], error) {
	return list(ctx, q, integrationCols, "integrations", where("user_id = $1", userID), p, scanIntegration)
}

// mcpJSON encodes the MCP settings, nil for another provider; the name
// has a column of its own (unique in the account).
func mcpJSON(in *ams.Integration) (name, mcp *string, err error) {
	if in.MCPSettings == nil {
		return nil, nil, nil
	}
	b, err := json.Marshal(in.MCPSettings)
	if err != nil {
		return nil, nil, fmt.Errorf("encode integration mcp: %w", err)
	}
	n, m := in.MCPSettings.Name, string(b)
	return &n, &m, nil
}

func configJSON(in *ams.Integration) (string, error) {
	if in.Config == nil {
		return "{}", nil
	}
	b, err := json.Marshal(in.Config)
	if err != nil {
		return "", fmt.Errorf("encode integration config: %w", err)
	}
	return string(b), nil
}

// CreateIntegration stores in with its secrets sealed (bound to its id).
func (q *Queries) CreateIntegration(ctx context.Context, in *ams.Integration, secrets map[string]string) error {
	config, err := configJSON(in)
	if err != nil {
		return err
	}
	var sealed *string
	if len(secrets) > 0 {
		plain, err := json.Marshal(secrets)
		if err != nil {
			return fmt.Errorf("encode integration secrets: %w", err)
		}
		s := q.s.sealer.Seal(string(plain), in.ID)
		sealed = &s
	}
	name, mcp, err := mcpJSON(in)
	if err != nil {
		return err
	}
	if _, err := q.w.Exec(ctx, `INSERT INTO integrations (`+integrationCols+`, secrets) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		in.ID, in.UserID, in.Provider, in.Status, config, in.LastError, MS(in.ConnectedAt), MS(in.CreatedAt), MS(in.UpdatedAt),
		in.SyncFailures, nullMS(in.NextSyncAt), in.PendingDeletion, name, mcp, sealed); err != nil {
		if name != nil && q.isUnique(err) {
			return ams.ParamError("parameter_invalid", "name", "An integration named '%s' already exists in this account; choose another name or disconnect it first.", *name)
		}
		return q.conflict("insert integration", err, "Integration '%s' already exists.", in.ID)
	}
	return nil
}

// UpdateIntegration writes in's status, config, last error, connected_at,
// updated_at, sync state and MCP settings (not its name); its secrets
// stay.
func (q *Queries) UpdateIntegration(ctx context.Context, in *ams.Integration) error {
	config, err := configJSON(in)
	if err != nil {
		return err
	}
	_, mcp, err := mcpJSON(in)
	if err != nil {
		return err
	}
	n, err := q.exec(ctx, "update integration", `UPDATE integrations SET status = $1, config = $2, last_error = $3, connected_at = $4, updated_at = $5,
		sync_failures = $6, next_sync_at = $7, pending_deletion = $8, mcp = COALESCE($9, mcp)
		WHERE id = $10 AND user_id = $11`, in.Status, config, in.LastError, MS(in.ConnectedAt), MS(in.UpdatedAt),
		in.SyncFailures, nullMS(in.NextSyncAt), in.PendingDeletion, mcp, in.ID, in.UserID)
	if err != nil {
		return err
	}
	return affected(n, "integration", in.ID)
}

// IntegrationSecrets returns the unsealed secrets of the user's
// integration (empty when it has none); ENOTFOUND otherwise.
func (q *Queries) IntegrationSecrets(ctx context.Context, userID, id string) (map[string]string, error) {
	var sealed *string
	err := q.r.QueryRow(ctx, `SELECT secrets FROM integrations WHERE id = $1 AND user_id = $2`, id, userID).Scan(&sealed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ams.NotFound("integration", id)
	} else if err != nil {
		return nil, q.fail("find integration", err)
	}
	out := map[string]string{}
	if sealed == nil {
		return out, nil
	}
	plain, err := q.s.sealer.Open(*sealed, id)
	if err != nil {
		return nil, fmt.Errorf("integration %s: %w", id, err)
	}
	if err := json.Unmarshal([]byte(plain), &out); err != nil {
		return nil, fmt.Errorf("decode integration secrets: %w", err)
	}
	return out, nil
}

// ActiveIntegrations returns the provider's integrations of every account
// whose status is connected or error, oldest first.
func (q *Queries) ActiveIntegrations(ctx context.Context, provider string) ([]*ams.Integration, error) {
	return collect(ctx, q.r, "integrations", scanIntegration, `SELECT `+integrationCols+` FROM integrations
		WHERE provider = $1 AND status IN ('`+ams.IntegrationConnected+`', '`+ams.IntegrationError+`') ORDER BY seq`, provider)
}

// FindIntegrationByName returns the user's integration of that name whose
// status is not disconnected (locked in a transaction); ENOTFOUND
// otherwise.
func (q *Queries) FindIntegrationByName(ctx context.Context, userID, name string) (*ams.Integration, error) {
	return findOne(ctx, q, scanIntegration, "integration", name,
		`SELECT `+integrationCols+` FROM integrations WHERE user_id = $1 AND name = $2 AND status <> '`+ams.IntegrationDisconnected+`'`+q.lock("FOR UPDATE"), userID, name)
}

// AccountIntegrations returns the user's integrations of the provider
// whose status is connected or error, oldest first.
func (q *Queries) AccountIntegrations(ctx context.Context, userID, provider string) ([]*ams.Integration, error) {
	return collect(ctx, q.r, "integrations", scanIntegration, `SELECT `+integrationCols+` FROM integrations
		WHERE user_id = $1 AND provider = $2 AND status IN ('`+ams.IntegrationConnected+`', '`+ams.IntegrationError+`') ORDER BY seq`, userID, provider)
}
