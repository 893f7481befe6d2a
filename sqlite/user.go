package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/sqlrow"
)

// CreateUser stores u. The e-mail is compared case-insensitively; ECONFLICT
// if it is taken.
func (db *DB) CreateUser(ctx context.Context, u *ams.User) error {
	_, err := db.write.ExecContext(ctx, `INSERT INTO users (`+sqlrow.UserCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		u.ID, strings.ToLower(u.Email), u.PasswordHash, u.Plan, u.RPM, u.RPD, u.Timezone, ms(u.CreatedAt), ms(u.UpdatedAt),
		sqlrow.NullMS(u.ApprovedAt), u.Admin)
	if isUnique(err) {
		return ams.Errorf(ams.ECONFLICT, "email_taken", "A user with e-mail %s already exists.", u.Email)
	}
	if err != nil {
		return fmt.Errorf("insert user: %w", err)
	}
	return nil
}

// FindUser returns the user with id; ENOTFOUND if there is none.
func (db *DB) FindUser(ctx context.Context, id string) (*ams.User, error) {
	return findUser(ctx, &db.rq, "id = ?", id)
}

// FindUserByEmail returns the user with the e-mail; ENOTFOUND if none.
func (db *DB) FindUserByEmail(ctx context.Context, email string) (*ams.User, error) {
	return findUser(ctx, &db.rq, "email = ?", strings.ToLower(email))
}

func findUser(ctx context.Context, q rowQuerier, cond string, arg any) (*ams.User, error) {
	u, err := sqlrow.User(q.QueryRowContext(ctx, `SELECT `+sqlrow.UserCols+` FROM users WHERE `+cond, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ams.NotFound("user", fmt.Sprint(arg))
	}
	if err != nil {
		return nil, fmt.Errorf("find user: %w", err)
	}
	return u, nil
}

// UpdateUser changes the fields set in upd and returns the user.
func (db *DB) UpdateUser(ctx context.Context, id string, upd ams.UserUpdate, now time.Time) (*ams.User, error) {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	u, err := findUser(ctx, txQuerier{tx}, "id = ?", id)
	if err != nil {
		return nil, err
	}
	if upd.Plan != nil {
		u.Plan = *upd.Plan
	}
	if upd.RPM != nil {
		u.RPM = *upd.RPM
	}
	if upd.RPD != nil {
		u.RPD = *upd.RPD
	}
	if upd.Timezone != nil {
		u.Timezone = *upd.Timezone
	}
	if upd.PasswordHash != nil {
		u.PasswordHash = *upd.PasswordHash
	}
	if upd.ApprovedAt != nil && u.ApprovedAt == nil { // approved once: the first time stays
		t := upd.ApprovedAt.UTC().Truncate(time.Millisecond)
		u.ApprovedAt = &t
	}
	if upd.Admin != nil {
		u.Admin = *upd.Admin
	}
	u.UpdatedAt = now
	if _, err := tx.ExecContext(ctx, `UPDATE users SET plan = ?, rpm = ?, rpd = ?, timezone = ?, password_hash = ?, approved_at = ?, admin = ?, updated_at = ? WHERE id = ?`,
		u.Plan, u.RPM, u.RPD, u.Timezone, u.PasswordHash, sqlrow.NullMS(u.ApprovedAt), u.Admin, ms(now), id); err != nil {
		return nil, fmt.Errorf("update user: %w", err)
	}
	return u, tx.Commit()
}

// ListWaitlist returns up to limit accounts that are not approved, oldest
// first, and whether there are more.
func (db *DB) ListWaitlist(ctx context.Context, limit int) ([]*ams.User, bool, error) {
	rows, err := db.rq.QueryContext(ctx, `SELECT `+sqlrow.UserCols+` FROM users WHERE approved_at IS NULL ORDER BY seq LIMIT ?`, limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("list waitlist: %w", err)
	}
	defer rows.Close()
	var us []*ams.User
	for rows.Next() {
		u, err := sqlrow.User(rows)
		if err != nil {
			return nil, false, fmt.Errorf("list waitlist: %w", err)
		}
		us = append(us, u)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("list waitlist: %w", err)
	}
	if len(us) > limit {
		return us[:limit], true, nil
	}
	return us, false, nil
}
