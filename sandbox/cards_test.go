package sandbox_test

import (
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/sandbox"
)

// approvedCard issues a card to a freshly approved customer.
func (e *env) approvedCard() sandbox.Card {
	e.t.Helper()
	c, w := e.customer("Card Holder")
	e.do("POST", "/verifications", map[string]any{"customerId": c.ID}).ok(e.t, 200, nil)
	var card sandbox.Card
	e.do("POST", "/cards", map[string]any{"customerId": c.ID, "internalAccountId": w}).ok(e.t, 201, &card)
	if card.State != "ACTIVE" || card.InternalAccountID != w || len(card.Last4) != 4 {
		e.t.Fatalf("card %+v", card)
	}
	return card
}

func TestCardStateMachine(t *testing.T) {
	e := newEnv(t)
	type move struct {
		to     string
		status int
		code   apierror.Code
	}
	ok := apierror.Code{}
	for _, tc := range []struct {
		name  string
		moves []move
	}{
		{"freeze and unfreeze", []move{{"FROZEN", 200, ok}, {"ACTIVE", 200, ok}}},
		{"close active", []move{{"CLOSED", 200, ok}}},
		{"close frozen", []move{{"FROZEN", 200, ok}, {"CLOSED", 200, ok}}},
		{"active to active", []move{{"ACTIVE", 409, apierror.InvalidStateTransition}}},
		{"frozen to frozen", []move{{"FROZEN", 200, ok}, {"FROZEN", 409, apierror.InvalidStateTransition}}},
		{"close twice", []move{{"CLOSED", 200, ok}, {"CLOSED", 409, apierror.CardAlreadyClosed}}},
		{"reopen closed", []move{{"CLOSED", 200, ok}, {"ACTIVE", 409, apierror.CardNotMutable}}},
		{"freeze closed", []move{{"CLOSED", 200, ok}, {"FROZEN", 409, apierror.CardNotMutable}}},
	} {
		card := e.approvedCard()
		for _, m := range tc.moves {
			r := e.do("PATCH", "/cards/"+card.ID, map[string]string{"state": m.to})
			if m.status != 200 {
				r.fails(t, m.status, m.code)
				continue
			}
			var got sandbox.Card
			r.ok(t, 200, &got)
			if got.State != m.to {
				t.Errorf("%s: state %s, want %s", tc.name, got.State, m.to)
			}
		}
	}
	card := e.approvedCard()
	var got sandbox.Card
	e.do("PATCH", "/cards/"+card.ID, map[string]string{"nickname": "travel"}).ok(t, 200, &got)
	if got.Nickname != "travel" || got.State != "ACTIVE" {
		t.Fatalf("nickname %+v", got)
	}
	e.do("GET", "/cards/"+card.ID, nil).ok(t, 200, &got)
	e.do("PATCH", "/cards/"+card.ID, map[string]string{"state": "CLOSED"}).ok(t, 200, nil)
	e.do("PATCH", "/cards/"+card.ID, map[string]string{"nickname": "again"}).fails(t, 409, apierror.CardNotMutable)
	e.do("PATCH", "/cards/"+card.ID, map[string]string{"state": "LOST"}).fails(t, 400, apierror.InvalidInput)
	e.do("PATCH", "/cards/"+card.ID, `{}`).fails(t, 400, apierror.InvalidInput)
	e.do("PATCH", "/cards/Card:nope", map[string]string{"state": "FROZEN"}).fails(t, 404, apierror.ReferenceNotFound)
	e.do("GET", "/cards/Card:nope", nil).fails(t, 404, apierror.ReferenceNotFound)
}

func TestCardIssuance(t *testing.T) {
	e := newEnv(t)
	c, _ := e.customer("Not Yet")
	e.do("POST", "/cards", map[string]any{"customerId": c.ID}).fails(t, 400, apierror.CardholderKYCNotApproved)
	pending, _ := e.customer("Still 001")
	e.do("POST", "/verifications", map[string]any{"customerId": pending.ID}).ok(t, 200, nil)
	e.do("POST", "/cards", map[string]any{"customerId": pending.ID}).fails(t, 400, apierror.CardholderKYCNotApproved)
	e.do("POST", "/verifications", map[string]any{"customerId": c.ID}).ok(t, 200, nil)
	_, otherWallet := e.customer("Other Wallet")
	e.do("POST", "/cards", map[string]any{"customerId": c.ID, "internalAccountId": otherWallet}).fails(t, 400, apierror.InvalidInput)
	e.do("POST", "/cards", map[string]any{}).fails(t, 400, apierror.InvalidInput)
	e.do("POST", "/cards", map[string]any{"customerId": "Customer:nobody"}).fails(t, 404, apierror.UserNotFound)
	e.do("POST", "/cards", map[string]any{"customerId": c.ID}).ok(t, 201, nil)
}
