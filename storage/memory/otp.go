package memory

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/walletgate/walletgate/storage"
)

// OTP issuances.

func cloneOTP(o *storage.OTPIssuance) *storage.OTPIssuance {
	c := *o
	c.TargetKey = slices.Clone(o.TargetKey)
	return &c
}

type otpRepo struct{ *tx }

func (r otpRepo) Put(ctx context.Context, o *storage.OTPIssuance) error {
	if err := r.lockX(ctx, lkOTPByCred, o.CredentialID); err != nil {
		return err
	}
	if prev, ok := r.s.otpByCred.get(o.CredentialID); ok {
		if err := r.lockX(ctx, lkOTP, prev); err != nil {
			return err
		}
		tdel(r.tx, &r.s.otp, prev)
	}
	if err := r.lockX(ctx, lkOTP, o.ID); err != nil {
		return err
	}
	if _, ok := r.s.otp.get(o.ID); ok {
		return storage.ErrDuplicate
	}
	tput(r.tx, &r.s.otp, o.ID, cloneOTP(o))
	tput(r.tx, &r.s.otpByCred, o.CredentialID, o.ID)
	r.watch(kindOTP, o.ID, o.ExpiresAt)
	return nil
}

// ofCredential returns the credential's live issuance, read under shared locks,
// or ErrNotFound.
func (r otpRepo) ofCredential(ctx context.Context, credentialID string) (storage.OTPIssuance, error) {
	if err := r.lockS(ctx, lkOTPByCred, credentialID); err != nil {
		return storage.OTPIssuance{}, err
	}
	id, ok := r.s.otpByCred.get(credentialID)
	if !ok {
		return storage.OTPIssuance{}, storage.ErrNotFound
	}
	if err := r.lockS(ctx, lkOTP, id); err != nil {
		return storage.OTPIssuance{}, err
	}
	o, ok := r.s.otp.get(id)
	if !ok {
		return storage.OTPIssuance{}, storage.ErrNotFound
	}
	return *cloneOTP(o), nil
}

// live locks issuance id and returns it when it is neither consumed nor
// expired at now: ErrNotFound, ErrConsumed or ErrExpired otherwise, checked
// in that order, each as a *storage.ConsumeError.
func (r otpRepo) live(ctx context.Context, id string, now time.Time) (*storage.OTPIssuance, error) {
	if err := r.lockX(ctx, lkOTP, id); err != nil {
		return nil, err
	}
	o, ok := r.s.otp.get(id)
	switch {
	case !ok:
		return nil, &storage.ConsumeError{ID: id, Err: storage.ErrNotFound}
	case !o.ConsumedAt.IsZero():
		return nil, &storage.ConsumeError{ID: id, Err: storage.ErrConsumed}
	case !now.Before(o.ExpiresAt):
		return nil, &storage.ConsumeError{ID: id, Err: storage.ErrExpired}
	}
	return o, nil
}

// attempt reserves one attempt of issuance id when it is live at now and
// fewer than limit attempts were made; it reports whether it did.
func (r otpRepo) attempt(ctx context.Context, id string, limit int, now time.Time) (*storage.OTPIssuance, error) {
	o, err := r.live(ctx, id, now)
	var gone *storage.ConsumeError
	switch {
	case errors.As(err, &gone):
		return nil, nil
	case err != nil:
		return nil, err
	case o.Attempts >= limit:
		return nil, nil
	}
	set(r.tx, &o.Attempts, o.Attempts+1)
	return cloneOTP(o), nil
}

func (r otpRepo) Consume(ctx context.Context, id string, now time.Time) error {
	o, err := r.live(ctx, id, now)
	if err != nil {
		return err
	}
	set(r.tx, &o.ConsumedAt, now)
	return nil
}
