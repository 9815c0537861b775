package sandbox

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
)

// Card states. A card moves ACTIVE <-> FROZEN, and from either to CLOSED,
// which is final (see cardMove).
const (
	CardActive = "ACTIVE"
	CardFrozen = "FROZEN"
	CardClosed = "CLOSED"
)

// CardRequest is the body of POST /cards.
type CardRequest struct {
	CustomerID string `json:"customerId"`
	// InternalAccountID is the funding wallet; it defaults to the
	// customer's embedded wallet and must be it when given.
	InternalAccountID string `json:"internalAccountId,omitempty"`
	Nickname          string `json:"nickname,omitempty"`
}

// CardUpdate is the body of PATCH /cards/{id}: a state move, a new
// nickname, or both.
type CardUpdate struct {
	State    string `json:"state,omitempty"`
	Nickname string `json:"nickname,omitempty"`
}

// Card is a card record.
type Card struct {
	ID                string    `json:"id"`
	CustomerID        string    `json:"customerId"`
	InternalAccountID string    `json:"internalAccountId"`
	State             string    `json:"state"`
	Brand             string    `json:"brand"`
	Form              string    `json:"form"`
	Last4             string    `json:"last4"`
	ExpMonth          int       `json:"expMonth"`
	ExpYear           int       `json:"expYear"`
	Nickname          string    `json:"nickname,omitempty"`
	CreatedAt         time.Time `json:"createdAt"`
	UpdatedAt         time.Time `json:"updatedAt"`
}

type card struct {
	Rec Card `json:"rec"`
}

// CreateCard issues an ACTIVE virtual card to a customer whose KYC (or KYB)
// is APPROVED. Errors: 400 INVALID_INPUT, 400 CARDHOLDER_KYC_NOT_APPROVED,
// 404 USER_NOT_FOUND.
func (s *Simulator) CreateCard(ctx context.Context, req CardRequest) (*Card, error) {
	var v apierror.Validation
	v.Check(req.CustomerID != "", "customerId", nil, "is required")
	v.Check(len(req.Nickname) <= 100, "nickname", apierror.Length(-1, 100), "is too long")
	if err := v.Err(); err != nil {
		return nil, err
	}
	id, err := s.newID("Card")
	if err != nil {
		return nil, err
	}
	var n [2]byte
	if _, err := io.ReadFull(s.cfg.Rand, n[:]); err != nil {
		return nil, apierror.Internal(err)
	}
	var out *Card
	err = s.atomic(ctx, func(st *state) error {
		now := st.now
		c, err := st.customer(req.CustomerID)
		if err != nil {
			return err
		}
		if status := c.Rec.KYCStatus + c.Rec.KYBStatus; status != StatusApproved {
			return apierror.New(apierror.CardholderKYCNotApproved, "customer %s is %s, not APPROVED: run POST /verifications first", c.Rec.ID, status)
		}
		if req.InternalAccountID != "" && req.InternalAccountID != c.WalletID {
			return apierror.InvalidField("internalAccountId", nil, "is not the customer's embedded wallet")
		}
		k := &card{Rec: Card{ID: id, CustomerID: c.Rec.ID, InternalAccountID: c.WalletID, State: CardActive, Brand: "VISA",
			Form: "VIRTUAL", Last4: fmt.Sprintf("%04d", binary.BigEndian.Uint16(n[:])%10000), ExpMonth: int(now.Month()),
			ExpYear: now.Year() + 3, Nickname: req.Nickname, CreatedAt: now, UpdatedAt: now}}
		add(st, kindCard, id, c.Rec.ID, k)
		r := k.Rec
		out = &r
		return nil
	})
	return out, err
}

// GetCard returns a card: 404 REFERENCE_NOT_FOUND when there is none.
func (s *Simulator) GetCard(ctx context.Context, id string) (*Card, error) {
	var out *Card
	err := s.read(ctx, func(st *state) error {
		k, err := st.card(id)
		if err != nil {
			return err
		}
		r := k.Rec
		out = &r
		return nil
	})
	return out, err
}

// UpdateCard applies the card state machine: ACTIVE to FROZEN, FROZEN to
// ACTIVE, ACTIVE or FROZEN to CLOSED.
//
// Errors: 400 INVALID_INPUT (no change given, unknown state), 404
// REFERENCE_NOT_FOUND, 409 CARD_ALREADY_CLOSED (CLOSED requested for a
// closed card), 409 CARD_NOT_MUTABLE (any other change to a closed card),
// 409 INVALID_STATE_TRANSITION (any other move, including to the current
// state).
func (s *Simulator) UpdateCard(ctx context.Context, id string, req CardUpdate) (*Card, error) {
	var v apierror.Validation
	v.Check(req.State == "" || req.State == CardActive || req.State == CardFrozen || req.State == CardClosed, "state",
		apierror.OneOf(CardActive, CardFrozen, CardClosed), "is not one of the allowed values")
	v.Check(len(req.Nickname) <= 100, "nickname", apierror.Length(-1, 100), "is too long")
	if err := v.Err(); err != nil {
		return nil, err
	}
	if req.State == "" && req.Nickname == "" {
		return nil, apierror.New(apierror.InvalidInput, "the request changes nothing: give state or nickname")
	}
	var out *Card
	err := s.atomic(ctx, func(st *state) error {
		now := st.now
		k, err := st.card(id)
		if err != nil {
			return err
		}
		r := &k.Rec
		switch {
		case r.State == CardClosed && req.State == CardClosed:
			return apierror.New(apierror.CardAlreadyClosed, "card %s is already closed", id)
		case r.State == CardClosed:
			return apierror.New(apierror.CardNotMutable, "card %s is closed and cannot change", id)
		case req.State != "" && !cardMove(r.State, req.State):
			return apierror.New(apierror.InvalidStateTransition, "a card cannot move from %s to %s", r.State, req.State)
		}
		if req.State != "" {
			r.State = req.State
		}
		if req.Nickname != "" {
			r.Nickname = req.Nickname
		}
		r.UpdatedAt = now
		c := *r
		out = &c
		return nil
	})
	return out, err
}

// cardMove reports whether a card may move from one state to another:
// ACTIVE to FROZEN or CLOSED, FROZEN to ACTIVE or CLOSED, nothing out of
// CLOSED.
func cardMove(from, to string) bool {
	switch from {
	case CardActive:
		return to == CardFrozen || to == CardClosed
	case CardFrozen:
		return to == CardActive || to == CardClosed
	}
	return false
}

// card returns the card id: 404 REFERENCE_NOT_FOUND when there is none.
func (st *state) card(id string) (*card, error) {
	k, err := load[card](st, kindCard, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, apierror.New(apierror.ReferenceNotFound, "card %q not found", id)
	}
	return k, err
}
