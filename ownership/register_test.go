package ownership_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/mr-tron/base58"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/storage"
	"github.com/walletgate/walletgate/storage/memory"
	"github.com/walletgate/walletgate/storage/storagetest"
)

// Valid addresses per chain (mainnet unless named).
var (
	regEVM      = crypto.PubkeyToAddress(mustKey().PublicKey).Hex()
	regSolana   = base58.Encode(ed25519.NewKeyFromSeed(make([]byte, 32)).Public().(ed25519.PublicKey))
	regTron     = "TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeL"
	regSpark    = "spark1pgss938nvery5elr8epzmux0pdm3072zp5nms6zvk2j6zm7m9w9d47jv34vdjc"
	regBitcoin  = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"
	regTestnet  = "tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx"
	regNodeID   = "02" + "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
	regFixedNow = time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)
)

// vaspDirectory is a VASPDirectory keyed by the name clients send.
type vaspDirectory map[string]string

func (d vaspDirectory) LookupVASP(name string) (string, bool) {
	v, ok := d[name]
	return v, ok
}

var testVASPs = vaspDirectory{"Coinbase": "Coinbase", "Kraken": "Kraken", "kraken.com": "Kraken"}

func mustKey() *ecdsa.PrivateKey {
	k, err := crypto.HexToECDSA("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
	if err != nil {
		panic(err)
	}
	return k
}

func newRegService(t *testing.T, vs ownership.Verifiers, network ownership.Network) (*ownership.Service, storage.Store) {
	t.Helper()
	store := memory.New()
	svc, err := ownership.New(ownership.Config{Store: store, Payouts: testPolicy, Verifiers: vs, Network: network, Clock: func() time.Time { return regFixedNow },
		VASPs: testVASPs})
	if err != nil {
		t.Fatal(err)
	}
	return svc, store
}

// fieldsOf returns the status, code and details.errors fields of err.
func fieldsOf(t *testing.T, err error) (int, apierror.Code, []string) {
	t.Helper()
	var e *apierror.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an *apierror.Error", err)
	}
	var fields []string
	if fe, ok := e.Details["errors"].([]apierror.FieldError); ok {
		for _, f := range fe {
			fields = append(fields, f.Field)
		}
	}
	return e.Status(), e.Code, fields
}

func eventsOf(t *testing.T, store storage.Store, accountID string) []storage.Event {
	t.Helper()
	return storagetest.Events(t, store, accountID)
}

// allEvents returns the events due for delivery (the first pending event of
// each account), leased in a transaction that rolls back.
func allEvents(t *testing.T, store storage.Store) []storage.Event {
	ctx := t.Context()
	t.Helper()
	var out []storage.Event
	rollback := errors.New("roll back")
	_ = store.Atomic(ctx, func(tx storage.Tx) error {
		out, _ = tx.Outbox().Lease(ctx, "test", regFixedNow.Add(time.Hour), time.Minute, 1000)
		return rollback
	})
	return out
}

// eventStatus decodes the status carried by a STATUS_UPDATED event.
func eventStatus(t *testing.T, e storage.Event) string {
	t.Helper()
	var env struct {
		ID, Type string
		Data     struct{ ID, Status string }
	}
	if err := json.Unmarshal(e.Payload, &env); err != nil {
		t.Fatal(err)
	}
	if env.Type != ownership.EventStatusUpdated || e.Type != ownership.EventStatusUpdated || env.ID != e.ID || env.Data.ID != e.AccountID {
		t.Fatalf("event envelope %s does not match %+v", e.Payload, e)
	}
	return env.Data.Status
}

func TestRegisterAccountValidAddresses(t *testing.T) {
	ctx := t.Context()
	vs := ownership.DefaultVerifiers()
	vs[ownership.AccountLightning] = ownership.LightningNodeVerifier{}
	for _, tc := range []struct {
		name, accountType, address string
		network                    ownership.Network
	}{
		{"ethereum", ownership.AccountEthereum, regEVM, ownership.Mainnet},
		{"base lowercase", ownership.AccountBase, "0x" + "1111111111111111111111111111111111111111", ownership.Mainnet},
		{"polygon", ownership.AccountPolygon, regEVM, ownership.Mainnet},
		{"plasma", ownership.AccountPlasma, regEVM, ownership.Mainnet},
		{"solana", ownership.AccountSolana, regSolana, ownership.Mainnet},
		{"tron", ownership.AccountTron, regTron, ownership.Mainnet},
		{"spark", ownership.AccountSpark, regSpark, ownership.Mainnet},
		{"bitcoin", ownership.AccountBitcoin, regBitcoin, ownership.Mainnet},
		{"bitcoin testnet", ownership.AccountBitcoin, regTestnet, ownership.Testnet},
		{"lightning node", ownership.AccountLightning, regNodeID, ownership.Mainnet},
		{"lightning alias node", ownership.AccountLightningAlias, regNodeID, ownership.Mainnet},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, store := newRegService(t, vs, tc.network)
			a, err := svc.RegisterAccount(ctx, ownership.NewAccount{CustomerID: "Customer:1", AccountType: tc.accountType,
				Address: tc.address, Currency: "USDC", OwnershipType: ownership.FirstParty,
				Info: json.RawMessage(`{"accountType":"` + tc.accountType + `"}`)})
			if err != nil {
				t.Fatalf("RegisterAccount: %v", err)
			}
			if a.Status != storage.StatusPendingOwnershipVerification || a.Version != 1 || a.Address != tc.address ||
				a.OwnershipType != ownership.FirstParty || !a.CreatedAt.Equal(regFixedNow) {
				t.Fatalf("account = %+v", a)
			}
			ev := eventsOf(t, store, a.ID)
			if len(ev) != 1 || eventStatus(t, ev[0]) != string(storage.StatusPendingOwnershipVerification) {
				t.Fatalf("events = %+v", ev)
			}
		})
	}
}

func TestRegisterAccountInvalidAddresses(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		name, accountType, address string
		network                    ownership.Network
	}{
		{"evm short", ownership.AccountEthereum, "0x12", ownership.Mainnet},
		{"evm bad checksum", ownership.AccountBase, "0xAbCDEF1234567890aBCdEf1234567890ABcDef12", ownership.Mainnet},
		{"solana not base58", ownership.AccountSolana, "0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl", ownership.Mainnet},
		{"tron bad checksum", ownership.AccountTron, "TNPeeaaFB7K9cmo4uQpcU32zGK8G1NYqeM", ownership.Mainnet},
		{"spark not bech32m", ownership.AccountSpark, "spark1BAD", ownership.Mainnet},
		{"spark wrong network", ownership.AccountSpark, regSpark, ownership.Regtest},
		{"bitcoin wrong network", ownership.AccountBitcoin, regBitcoin, ownership.Testnet},
		{"bitcoin garbage", ownership.AccountBitcoin, "bc1notanaddress", ownership.Mainnet},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, store := newRegService(t, nil, tc.network)
			_, err := svc.RegisterAccount(ctx, ownership.NewAccount{CustomerID: "Customer:1", AccountType: tc.accountType,
				Address: tc.address, Currency: "USDC", OwnershipType: ownership.FirstParty})
			status, code, fields := fieldsOf(t, err)
			if status != 400 || code != apierror.InvalidInput || !reflect.DeepEqual(fields, []string{"accountInfo.address"}) {
				t.Fatalf("got %d %s %v (%v)", status, code, fields, err)
			}
			if ev := allEvents(t, store); len(ev) != 0 {
				t.Fatalf("a rejected account wrote events: %+v", ev)
			}
		})
	}
}

func TestRegisterAccountInvalidFields(t *testing.T) {
	ctx := t.Context()
	svc, _ := newRegService(t, nil, ownership.Mainnet)
	for _, tc := range []struct {
		name   string
		n      ownership.NewAccount
		fields []string
	}{
		{"empty", ownership.NewAccount{}, []string{"accountInfo.accountType", "accountInfo.address", "currency"}},
		{"ownership type", ownership.NewAccount{AccountType: "USD_ACCOUNT", Address: "12345", Currency: "USD", OwnershipType: "MINE"},
			[]string{"ownershipType"}},
		{"ownership type required for self custody", ownership.NewAccount{AccountType: ownership.AccountEthereum, Address: regEVM, Currency: "USDC"},
			[]string{"ownershipType"}},
		{"bad info", ownership.NewAccount{AccountType: "USD_ACCOUNT", Address: "12345", Currency: "USD", Info: json.RawMessage(`{`)},
			[]string{"accountInfo"}},
		{"unknown network", ownership.NewAccount{AccountType: "USD_ACCOUNT", Address: "12345", Currency: "USD", Network: "moon"},
			[]string{"network"}},
		{"other network", ownership.NewAccount{AccountType: ownership.AccountBitcoin, Address: regBitcoin, Currency: "BTC",
			OwnershipType: ownership.FirstParty, Network: "testnet"}, []string{"network"}},
		{"unknown account type", ownership.NewAccount{AccountType: "ethereum_wallet", Address: regEVM, Currency: "USDC",
			OwnershipType: ownership.FirstParty}, []string{"accountInfo.accountType"}},
		{"unknown fiat-looking type", ownership.NewAccount{AccountType: "ETH_ACCOUNT", Address: "12345", Currency: "USD"},
			[]string{"accountInfo.accountType"}},
		{"currency not a code", ownership.NewAccount{AccountType: "USD_ACCOUNT", Address: "12345", Currency: "usd"},
			[]string{"currency"}},
		{"VASP not in the directory", ownership.NewAccount{AccountType: ownership.AccountEthereum, Address: regEVM, Currency: "USDC",
			OwnershipType: ownership.FirstParty, VaspName: "Exchange"}, []string{"accountInfo.vaspName"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := svc.RegisterAccount(ctx, tc.n)
			status, code, fields := fieldsOf(t, err)
			if status != 400 || code != apierror.InvalidInput || !reflect.DeepEqual(fields, tc.fields) {
				t.Fatalf("got %d %s %v, want 400 INVALID_INPUT %v (%v)", status, code, fields, tc.fields, err)
			}
		})
	}
}

func TestRegisterAccountStartingStatus(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		name string
		n    ownership.NewAccount
		want storage.AccountStatus
	}{
		{"first party self custody", ownership.NewAccount{AccountType: ownership.AccountEthereum, Address: regEVM, OwnershipType: ownership.FirstParty},
			storage.StatusPendingOwnershipVerification},
		{"third party self custody", ownership.NewAccount{AccountType: ownership.AccountEthereum, Address: regEVM, OwnershipType: ownership.ThirdParty},
			storage.StatusActive},
		{"custodial first party", ownership.NewAccount{AccountType: ownership.AccountEthereum, Address: regEVM, OwnershipType: ownership.FirstParty,
			VaspName: "Coinbase"}, storage.StatusActive},
		{"custodial without ownership type", ownership.NewAccount{AccountType: ownership.AccountSolana, Address: regSolana, VaspName: "Kraken"},
			storage.StatusActive},
		{"custodial named another way", ownership.NewAccount{AccountType: ownership.AccountSolana, Address: regSolana, VaspName: "kraken.com",
			OwnershipType: ownership.FirstParty}, storage.StatusActive},
		{"fiat first party", ownership.NewAccount{AccountType: "USD_ACCOUNT", Address: "123456789", OwnershipType: ownership.FirstParty},
			storage.StatusActive},
		{"lightning invoice without verifier", ownership.NewAccount{AccountType: ownership.AccountLightning, Address: "lnbc1invoice",
			OwnershipType: ownership.FirstParty}, storage.StatusActive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, store := newRegService(t, nil, ownership.Mainnet)
			tc.n.CustomerID, tc.n.Currency = "Customer:1", "USDC"
			a, err := svc.RegisterAccount(ctx, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if a.Status != tc.want || a.OwnershipType != tc.n.OwnershipType || a.VaspName != testVASPs[tc.n.VaspName] {
				t.Fatalf("account = %+v, want status %s", a, tc.want)
			}
			var stored storage.ExternalAccount
			_ = store.Atomic(ctx, func(tx storage.Tx) error { stored, err = tx.ExternalAccounts().Get(ctx, a.ID); return err })
			if err != nil || stored.Status != tc.want {
				t.Fatalf("stored = %+v, %v", stored, err)
			}
			ev := eventsOf(t, store, a.ID)
			if len(ev) != 1 || eventStatus(t, ev[0]) != string(tc.want) {
				t.Fatalf("events = %+v", ev)
			}
		})
	}
}

func TestRegisterAccountEventInCreateTransaction(t *testing.T) {
	ctx := t.Context()
	svc, store := newRegService(t, nil, ownership.Mainnet)
	n := ownership.NewAccount{ID: "ExternalAccount:0b7c2a4e-9d1f-4e3a-8c5b-6a7d8e9f0a1b", CustomerID: "Customer:1",
		AccountType: ownership.AccountEthereum, Address: regEVM, Currency: "USDC", OwnershipType: ownership.FirstParty}

	// A transaction that fails after the registration keeps neither the
	// account nor its event.
	boom := errors.New("host failure")
	err := store.Atomic(ctx, func(tx storage.Tx) error {
		if _, err := svc.RegisterAccountIn(ctx, tx, n); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Atomic = %v", err)
	}
	if ev := allEvents(t, store); len(ev) != 0 {
		t.Fatalf("rolled-back create left events: %+v", ev)
	}
	if err := store.Atomic(ctx, func(tx storage.Tx) error { _, err := tx.ExternalAccounts().Get(ctx, n.ID); return err }); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("rolled-back create left the account: %v", err)
	}

	// The committed create writes exactly one event; a duplicate id fails
	// with 409 and writes none.
	if _, err := svc.RegisterAccount(ctx, n); err != nil {
		t.Fatal(err)
	}
	_, err = svc.RegisterAccount(ctx, n)
	if status, code, _ := fieldsOf(t, err); status != 409 || code != apierror.Conflict {
		t.Fatalf("duplicate = %d %s", status, code)
	}
	if ev := allEvents(t, store); len(ev) != 1 || ev[0].AccountID != n.ID {
		t.Fatalf("events = %+v", ev)
	}
}

func TestSetStatusEvents(t *testing.T) {
	ctx := t.Context()
	svc, store := newRegService(t, nil, ownership.Mainnet)
	a, err := svc.RegisterAccount(ctx, ownership.NewAccount{CustomerID: "Customer:1", AccountType: ownership.AccountEthereum,
		Address: regEVM, Currency: "USDC", OwnershipType: ownership.FirstParty})
	if err != nil {
		t.Fatal(err)
	}
	for _, to := range []storage.AccountStatus{storage.StatusUnderReview, storage.StatusActive, storage.StatusActive, storage.StatusInactive} {
		got, err := svc.SetStatus(ctx, a.ID, to)
		if err != nil || got.Status != to {
			t.Fatalf("SetStatus(%s) = %+v, %v", to, got, err)
		}
	}
	ev := eventsOf(t, store, a.ID)
	var seen []string
	for _, e := range ev {
		seen = append(seen, eventStatus(t, e))
	}
	want := []string{"PENDING_OWNERSHIP_VERIFICATION", "UNDER_REVIEW", "ACTIVE", "INACTIVE"} // no event for ACTIVE→ACTIVE
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("event statuses = %v, want %v", seen, want)
	}

	// INACTIVE is final.
	_, err = svc.SetStatus(ctx, a.ID, storage.StatusActive)
	if status, code, _ := fieldsOf(t, err); status != 409 || code != apierror.Conflict {
		t.Fatalf("SetStatus on INACTIVE = %d %s", status, code)
	}
	// Unknown status and unknown account.
	_, err = svc.SetStatus(ctx, a.ID, "FROZEN")
	if status, code, fields := fieldsOf(t, err); status != 400 || code != apierror.InvalidInput || !reflect.DeepEqual(fields, []string{"status"}) {
		t.Fatalf("SetStatus(FROZEN) = %d %s %v", status, code, fields)
	}
	_, err = svc.SetStatus(ctx, "ExternalAccount:00000000-0000-4000-8000-000000000000", storage.StatusActive)
	if status, code, _ := fieldsOf(t, err); status != 404 || code != apierror.ReferenceNotFound {
		t.Fatalf("SetStatus(missing) = %d %s", status, code)
	}
	if n := len(eventsOf(t, store, a.ID)); n != 4 {
		t.Fatalf("failed SetStatus calls wrote events: %d", n)
	}
}

func TestLightningOneRegistrationCoversBothSpellings(t *testing.T) {
	for _, key := range []string{ownership.AccountLightning, ownership.AccountLightningAlias} {
		vs := ownership.DefaultVerifiers()
		vs[key] = ownership.LightningNodeVerifier{}
		for _, spelling := range []string{ownership.AccountLightning, ownership.AccountLightningAlias} {
			v, err := vs.Lookup(spelling)
			if err != nil {
				t.Fatalf("registered under %s, Lookup(%s) = %v", key, spelling, err)
			}
			if _, ok := v.(ownership.LightningNodeVerifier); !ok {
				t.Fatalf("Lookup(%s) = %T", spelling, v)
			}
			err = vs.ValidateAddress(ownership.Wallet{AccountType: spelling, Address: "lnbc1invoice"})
			if status, code, _ := fieldsOf(t, err); status != 400 || code != apierror.InvalidInput {
				t.Fatalf("ValidateAddress(%s, invoice) = %d %s", spelling, status, code)
			}
		}
	}
	// Without a registration both spellings answer 409.
	for _, spelling := range []string{ownership.AccountLightning, ownership.AccountLightningAlias} {
		_, err := ownership.DefaultVerifiers().Lookup(spelling)
		if status, code, _ := fieldsOf(t, err); status != 409 || code != apierror.Conflict {
			t.Fatalf("Lookup(%s) = %d %s", spelling, status, code)
		}
	}
}

func TestValidateAddressWithoutVerifier(t *testing.T) {
	vs := ownership.DefaultVerifiers()
	if err := vs.ValidateAddress(ownership.Wallet{AccountType: "USD_ACCOUNT", Address: "anything"}); err != nil {
		t.Fatalf("fiat: %v", err)
	}
	err := vs.ValidateAddress(ownership.Wallet{AccountType: ownership.AccountSolana, Address: "x"})
	if !errors.Is(err, ownership.ErrMalformed) {
		t.Fatalf("solana: %v", err)
	}
}

// Without a directory no vaspName is accepted: a custodial claim is what
// exempts a wallet from the ownership rule, so it fails closed.
func TestRegisterAccountVASPWithoutDirectory(t *testing.T) {
	ctx := t.Context()
	store := memory.New()
	svc, err := ownership.New(ownership.Config{Store: store, Payouts: testPolicy})
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.RegisterAccount(ctx, ownership.NewAccount{CustomerID: "Customer:1", AccountType: ownership.AccountEthereum,
		Address: regEVM, Currency: "USDC", OwnershipType: ownership.FirstParty, VaspName: "Coinbase"})
	status, code, fields := fieldsOf(t, err)
	if status != 400 || code != apierror.InvalidInput || !reflect.DeepEqual(fields, []string{"accountInfo.vaspName"}) {
		t.Fatalf("got %d %s %v (%v)", status, code, fields, err)
	}
	if n := len(allEvents(t, store)); n != 0 {
		t.Fatalf("%d events after a refused registration", n)
	}
}

// A currency the payout policy does not pay out is refused at registration,
// naming the field and the policy's currencies: an account no payout could
// reach is an error now, not at its first payout. The zero policy pays out
// nothing, so it registers nothing.
func TestRegisterAccountCurrencyOutsidePolicy(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		name    string
		policy  ownership.PayoutPolicy
		allowed []string
	}{
		{"code-shaped, not in the policy", testPolicy, []string{"BTC", "EUR", "USD", "USDC"}},
		// GBP has a verification threshold but no maximum: it is not paid out.
		{"threshold only", testPolicy, []string{"BTC", "EUR", "USD", "USDC"}},
		{"zero policy", ownership.PayoutPolicy{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := memory.New()
			svc, err := ownership.New(ownership.Config{Store: store, Payouts: tc.policy})
			if err != nil {
				t.Fatal(err)
			}
			currency := "XYZ"
			if tc.name == "threshold only" {
				currency = "GBP"
			}
			_, err = svc.RegisterAccount(ctx, ownership.NewAccount{CustomerID: "Customer:1", AccountType: "GBP_ACCOUNT",
				Address: "12345", Currency: currency})
			ae := apierrortest.WantFields(t, err, apierror.InvalidInput, "currency")
			if got := ae.FieldErrors()[0].Constraint; got == nil || !reflect.DeepEqual(got.Enum, tc.allowed) {
				t.Fatalf("constraint %+v, want enum %v", got, tc.allowed)
			}
			if n := len(allEvents(t, store)); n != 0 {
				t.Fatalf("%d events after a refused registration", n)
			}
		})
	}
}
