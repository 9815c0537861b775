package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/walletgate/walletgate/storage"
)

const (
	approvalColumns = `id, customer_id, source_id, destination_id, amount, currency, rule, request_id, requested_by,
	required, approvers, state, created_at, updated_at, expires_at, version`
	approvalInsertSQL = `INSERT INTO {s}.payout_approvals (` + approvalColumns + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, 1) ON CONFLICT DO NOTHING`
	approvalLockSQL   = `SELECT ` + approvalColumns + ` FROM {s}.payout_approvals WHERE id = $1 FOR UPDATE`
	approvalUpdateSQL = `UPDATE {s}.payout_approvals SET approvers = $2, state = $3, updated_at = $4, version = version + 1
	WHERE id = $1 AND version = $5 RETURNING version`
	approvalExistsSQL = `SELECT 1 FROM {s}.payout_approvals WHERE id = $1`
)

type approvalRepo struct{ t *tx }

func approvalFields(t *tx, a *storage.PayoutApproval) error {
	fs := []field{key("ID", a.ID), text("CustomerID", a.CustomerID), text("SourceID", a.SourceID),
		text("DestinationID", a.DestinationID), text("Currency", a.Currency), text("Rule", a.Rule),
		text("RequestID", a.RequestID), text("RequestedBy", a.RequestedBy), text("State", a.State)}
	for _, ap := range a.Approvers {
		fs = append(fs, text("Approvers", ap))
	}
	return t.valid("payout approval", fs...)
}

func (r approvalRepo) Create(ctx context.Context, a *storage.PayoutApproval) error {
	if err := approvalFields(r.t, a); err != nil {
		return err
	}
	approvers := a.Approvers
	if approvers == nil {
		approvers = []string{}
	}
	tag, err := r.t.exec(ctx, r.t.s.q.approvalInsert, a.ID, a.CustomerID, a.SourceID, a.DestinationID, a.Amount, a.Currency,
		a.Rule, a.RequestID, a.RequestedBy, a.Required, approvers, a.State, a.CreatedAt, a.UpdatedAt, a.ExpiresAt)
	if err != nil {
		return wrap("create payout approval", err)
	}
	if tag.RowsAffected() == 0 {
		return storage.ErrDuplicate
	}
	a.Version = 1
	return nil
}

func (r approvalRepo) Lock(ctx context.Context, id string) (storage.PayoutApproval, error) {
	var a storage.PayoutApproval
	if !storableKey(id) {
		return a, notFoundOrDone(r.t)
	}
	found, err := r.t.queryRow(ctx, r.t.s.q.approvalLock, []any{id}, func(row pgx.Row) error {
		return row.Scan(&a.ID, &a.CustomerID, &a.SourceID, &a.DestinationID, &a.Amount, &a.Currency, &a.Rule, &a.RequestID,
			&a.RequestedBy, &a.Required, &a.Approvers, &a.State, utc(&a.CreatedAt), utc(&a.UpdatedAt), utc(&a.ExpiresAt), &a.Version)
	})
	switch {
	case err != nil:
		return storage.PayoutApproval{}, wrap("lock payout approval", err)
	case !found:
		return a, storage.ErrNotFound
	}
	if len(a.Approvers) == 0 {
		a.Approvers = nil
	}
	return a, nil
}

func (r approvalRepo) Update(ctx context.Context, a *storage.PayoutApproval) error {
	if err := approvalFields(r.t, a); err != nil {
		return err
	}
	approvers := a.Approvers
	if approvers == nil {
		approvers = []string{}
	}
	var v int64
	found, err := r.t.queryRow(ctx, r.t.s.q.approvalUpdate, []any{a.ID, approvers, a.State, a.UpdatedAt, a.Version},
		func(row pgx.Row) error { return row.Scan(&v) })
	if err != nil {
		return wrap("update payout approval", err)
	}
	if !found {
		return r.t.casMiss(ctx, r.t.s.q.approvalExists, a.ID, "payout approval")
	}
	a.Version = v
	return nil
}
