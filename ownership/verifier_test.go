package ownership

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/apierrortest"
)

// vector is one entry of testdata/vectors/vectors.json.
type vector struct {
	Name           string `json:"name"`
	AccountType    string `json:"account_type"`
	Network        string `json:"network"`
	Address        string `json:"address"`
	Message        string `json:"message"`
	MessageUTF8Hex string `json:"message_utf8_hex"`
	Signature      string `json:"signature"`
	Scheme         string `json:"scheme"`
	Valid          bool   `json:"valid"`
	ExpectReason   string `json:"expect_reason"`
	Library        string `json:"library"`
}

func loadVectors(tb testing.TB) []vector {
	tb.Helper()
	raw, err := os.ReadFile("testdata/vectors/vectors.json")
	if err != nil {
		tb.Fatal(err)
	}
	var file struct {
		Vectors []vector `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		tb.Fatal(err)
	}
	if len(file.Vectors) == 0 {
		tb.Fatal("no vectors")
	}
	return file.Vectors
}

// vectorNetwork maps a vector's network to Network; chains without a
// Network notion (Solana devnet, TRON Nile) verify under Mainnet.
func vectorNetwork(s string) Network {
	n, ok := ParseNetwork(s)
	if !ok {
		return Mainnet
	}
	return n
}

// vectorVerifiers is DefaultVerifiers plus the Lightning node verifier.
func vectorVerifiers() Verifiers {
	vs := DefaultVerifiers()
	vs[AccountLightning] = LightningNodeVerifier{}
	return vs
}

// wantReject asserts err is 400 INVALID_INPUT whose reason contains want.
func wantReject(t *testing.T, err error, want string) {
	t.Helper()
	ae := apierrortest.Want(t, err, apierror.InvalidInput, "")
	if !strings.Contains(ae.Reason(), want) {
		t.Fatalf("reason = %q, want it to contain %q", ae.Reason(), want)
	}
	if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrMismatch) {
		t.Fatalf("error %v wraps neither ErrMalformed nor ErrMismatch", err)
	}
}

func TestVectors(t *testing.T) {
	vs := vectorVerifiers()
	ctx := t.Context()
	counts := map[bool]int{}
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			if hex.EncodeToString([]byte(v.Message)) != v.MessageUTF8Hex {
				t.Fatal("message does not match message_utf8_hex")
			}
			w := Wallet{AccountType: v.AccountType, Address: v.Address, Network: vectorNetwork(v.Network)}
			err := vs.Verify(ctx, w, []byte(v.Message), Signature{Value: v.Signature, Scheme: v.Scheme})
			counts[v.Valid]++
			if v.Valid {
				if err != nil {
					t.Fatalf("%s: %v", v.Library, err)
				}
				// The same signature must not verify another message.
				err := vs.Verify(ctx, w, []byte(v.Message+"."), Signature{Value: v.Signature, Scheme: v.Scheme})
				wantReject(t, err, "")
				if !errors.Is(err, ErrMismatch) {
					t.Fatalf("changed message: %v is not a mismatch", err)
				}
				return
			}
			wantReject(t, err, v.ExpectReason)
		})
	}
	t.Logf("%d valid and %d invalid vectors", counts[true], counts[false])
}

// TestVectorsWhitespace checks that surrounding whitespace on the address
// and the signature (a pasted trailing newline) is ignored.
func TestVectorsWhitespace(t *testing.T) {
	vs := vectorVerifiers()
	for _, v := range loadVectors(t) {
		if !v.Valid {
			continue
		}
		w := Wallet{AccountType: v.AccountType, Address: " " + v.Address + "\n", Network: vectorNetwork(v.Network)}
		if err := vs.Verify(t.Context(), w, []byte(v.Message), Signature{Value: "\t" + v.Signature + "\r\n", Scheme: v.Scheme}); err != nil {
			t.Errorf("%s: %v", v.Name, err)
		}
	}
}

func TestLookup(t *testing.T) {
	vs := DefaultVerifiers()
	for _, typ := range []string{AccountBase, AccountEthereum, AccountPolygon, AccountPlasma, AccountSolana, AccountSpark, AccountTron, AccountBitcoin} {
		if v, err := vs.Lookup(typ); err != nil || v == nil {
			t.Errorf("%s: %v", typ, err)
		}
	}
	for _, typ := range []string{AccountLightning, AccountLightningAlias} {
		_, err := vs.Lookup(typ)
		if apierror.CodeOf(err) != apierror.Conflict {
			t.Fatalf("%s: code %v, want CONFLICT", typ, apierror.CodeOf(err))
		}
		if apierror.As(err).Status() != 409 || apierror.As(err).Reason() != "lightning accounts hold no signing key" {
			t.Fatalf("%s: %v", typ, err)
		}
		err = vs.Verify(t.Context(), Wallet{AccountType: typ}, nil, Signature{})
		if apierror.CodeOf(err) != apierror.Conflict {
			t.Fatalf("%s verify: %v", typ, err)
		}
	}
	for _, typ := range []string{"", "EUR_ACCOUNT", "ethereum_wallet"} {
		_, err := vs.Lookup(typ)
		wantReject(t, err, "account type has no signature verifier")
	}
	// A registered Lightning verifier replaces the 409.
	vs[AccountLightning] = LightningNodeVerifier{}
	if _, err := vs.Lookup(AccountLightning); err != nil {
		t.Fatal(err)
	}
	// A nil entry is treated as absent.
	vs[AccountTron] = nil
	if _, err := vs.Lookup(AccountTron); apierror.CodeOf(err) != apierror.InvalidInput {
		t.Fatal(err)
	}
	// Each call returns a new map.
	if _, err := DefaultVerifiers().Lookup(AccountTron); err != nil {
		t.Fatal(err)
	}
}

func TestAnyOf(t *testing.T) {
	ctx := t.Context()
	reject := VerifierFunc(func(context.Context, Wallet, []byte, Signature) error { return mismatch("first") })
	reject2 := VerifierFunc(func(context.Context, Wallet, []byte, Signature) error { return malformed("second") })
	accept := VerifierFunc(func(context.Context, Wallet, []byte, Signature) error { return nil })
	outage := VerifierFunc(func(context.Context, Wallet, []byte, Signature) error {
		return apierror.Internal(errors.New("rpc down"))
	})
	if err := AnyOf(reject, accept).Verify(ctx, Wallet{}, nil, Signature{}); err != nil {
		t.Fatal(err)
	}
	wantReject(t, AnyOf(reject, reject2).Verify(ctx, Wallet{}, nil, Signature{}), "first")
	if err := AnyOf(reject, outage, reject2).Verify(ctx, Wallet{}, nil, Signature{}); apierror.CodeOf(err) != apierror.InternalError {
		t.Fatalf("outage: %v", err)
	}
	wantReject(t, AnyOf().Verify(ctx, Wallet{}, nil, Signature{}), "no verifier configured")
}

func TestNetwork(t *testing.T) {
	for _, n := range []Network{Mainnet, Testnet, Signet, Regtest} {
		got, ok := ParseNetwork(strings.ToUpper(n.String()))
		if !ok || got != n {
			t.Errorf("%v: %v %v", n, got, ok)
		}
	}
	if _, ok := ParseNetwork("devnet"); ok {
		t.Error("devnet parsed")
	}
	if Network(9).String() != "unknown" {
		t.Error(Network(9).String())
	}
	var zero Wallet
	if zero.Network != Mainnet {
		t.Error("zero network is not mainnet")
	}
}

func TestErrorShape(t *testing.T) {
	err := mismatch("recovered address does not match")
	b, _ := json.Marshal(err)
	want := `{"status":400,"code":"INVALID_INPUT","message":"invalid wallet signature: recovered address does not match","details":{"reason":"recovered address does not match"}}`
	if string(b) != want {
		t.Fatalf("%s", b)
	}
	if !errors.Is(err, ErrMismatch) || errors.Is(err, ErrMalformed) {
		t.Fatal("mismatch cause")
	}
	if !errors.Is(malformed("x"), ErrMalformed) {
		t.Fatal("malformed cause")
	}
}
