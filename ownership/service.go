package ownership

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/apierror/operation"
	"github.com/walletgate/walletgate/storage"
)

// DefaultChallengeTTL is how long a challenge stays valid by default.
const DefaultChallengeTTL = 30 * time.Minute

// Challenge methods.
const (
	MethodWalletSignature = "WALLET_SIGNATURE"
	MethodLiveness        = "LIVENESS"
)

// EventStatusUpdated is the type of the event written on every status change.
const EventStatusUpdated = "EXTERNAL_ACCOUNT.STATUS_UPDATED"

// Liveness starts a hosted liveness check; the host implements it with its
// provider. The outcome arrives later through [Service.CompleteLiveness].
type Liveness interface {
	// Start opens a session for the account and returns where the user
	// completes it. Token is optional (for providers with an SDK).
	Start(ctx context.Context, account storage.ExternalAccount, expiresAt time.Time) (LivenessSession, error)
}

// LivenessSession is what a liveness provider returns.
type LivenessSession struct {
	VerificationLink string
	Token            string
}

// Config configures a [Service].
type Config struct {
	// Store holds the accounts, challenges and the event outbox. Required.
	Store storage.Store
	// Verifiers selects the signature verifier per account type; nil means
	// DefaultVerifiers(). An account type is eligible for WALLET_SIGNATURE
	// challenges exactly when it has a verifier here. An EVM type has
	// contract accounts exactly when its verifier is a [ContractVerifier],
	// which must serve the type's chain on Network (see [ContractChains]).
	Verifiers Verifiers
	// Liveness starts LIVENESS challenges; without it they answer 400.
	Liveness Liveness
	// Guard decides whether the caller may act on an external account
	// (see [AccountGuard]); nil means no guard, for a host with one tenant
	// or whose every caller is trusted. Every operation on an account a
	// caller names asks it once per call, inside the transaction that
	// first reads the account, before any answer that depends on the
	// account and before anything is written; an id that names nothing
	// (or nothing in the call's [Tree]) is 404 REFERENCE_NOT_FOUND before
	// it is asked. It is asked by every transport alike: [Service.Handler]
	// (which refuses to serve without a guard), a host's gRPC or HTTP stack
	// calling the methods, a provider's callback. Where each operation
	// asks:
	//
	//   - StartChallenge and Verify: on the account read through the tree,
	//     before its eligibility or challenge is looked at;
	//   - CompleteLiveness and SetStatus: on the account as held, before
	//     its challenge or status is touched (a host that completes
	//     liveness from its provider's callback puts in the context a
	//     principal its guard admits);
	//   - Account: on the account read (404 on a plain refusal); Accounts:
	//     on each account of the customer, one refused plainly left out;
	//   - RegisterAccount and RegisterAccountIn: on the new account, once
	//     it is validated and before it is stored (a plain refusal is 403
	//     FORBIDDEN: there is no id to be unknown);
	//   - CheckPayout and CheckPayoutIn: on the destination account, before
	//     the payout rules (404 on a plain refusal: no payout is allowed).
	//
	// Without a guard nothing more is read or asked.
	Guard AccountGuard
	// Service names the service in messageToSign, e.g. "payments.example.com".
	// It must be printable ASCII; empty means "walletgate".
	Service string
	// Network is the network the service runs on (Bitcoin and Spark
	// addresses must belong to it).
	Network Network
	// ChallengeTTL is the lifetime of a challenge; zero means
	// DefaultChallengeTTL.
	ChallengeTTL time.Duration
	// Clock returns the current time; nil means time.Now.
	Clock func() time.Time
	// Rand supplies nonces and ids; nil means crypto/rand.
	Rand io.Reader
	// Render turns an account into the JSON clients receive (the 200 of
	// verify and the data of events); nil means [AccountJSON]. It must
	// render a JSON object without a "proof" member: the event of a valid
	// signature adds "proof" to it, and Verify answers 500 otherwise.
	Render func(storage.ExternalAccount) any
	// Payouts configures the payout gate ([Service.CheckPayout]): the
	// verification thresholds and the single-transaction maxima. New
	// refuses a policy that [PayoutPolicy.Validate] refuses. The currencies
	// with a maximum (MaxAmounts.ByCurrency) are also the currencies
	// registration accepts. The zero value configures no currency, so the
	// gate refuses every payout and registration every account (see
	// [PayoutPolicy]).
	Payouts PayoutPolicy
	// VASPs is the directory of the custodians whose wallets registration
	// accepts as custodial (a vaspName); nil accepts none, so every
	// vaspName is refused.
	VASPs VASPDirectory
	// Telemetry receives the service's records, spans and metrics; the
	// zero value reports nothing. A wallet signature that does not verify
	// is logged at slog.LevelWarn with the code and reason. Each
	// verification is a span "ownership.verify" and each payout decision a
	// span "ownership.payout.decide", counted and timed by the outcome
	// counters and duration histograms (apierror/operation/README.md lists
	// them). Records, spans and metric attributes carry operation names,
	// outcomes, error codes and rules only: nothing secret (signatures,
	// messages, bodies) and no identifier or address of an account.
	Telemetry operation.Telemetry
}

// Service runs the ownership challenge lifecycle of external accounts. It
// holds no state of its own and is safe for concurrent use.
type Service struct {
	cfg Config // normalized by New
	tel *instruments
}

// New returns a service for cfg. It refuses a Config without a Store, a
// Service name that is not printable ASCII, a payout policy that
// [PayoutPolicy.Validate] refuses and a [ContractVerifier] in Verifiers
// under an account type that has no contract-account chain on Network
// ([ContractChainFor]) or whose chain it does not serve; every other zero
// field takes the default its doc names.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, errors.New("ownership: Config.Store is required")
	}
	if err := cfg.Payouts.Validate(); err != nil {
		return nil, err
	}
	cfg.Payouts = PayoutPolicy{VerificationThresholds: cfg.Payouts.VerificationThresholds.clone(), MaxAmounts: cfg.Payouts.MaxAmounts.clone()}
	if cfg.Verifiers == nil {
		cfg.Verifiers = DefaultVerifiers()
	}
	if err := cfg.Verifiers.checkContractVerifiers(cfg.Network); err != nil {
		return nil, err
	}
	if cfg.Service == "" {
		cfg.Service = "walletgate"
	}
	for _, r := range cfg.Service {
		if r < 0x20 || r > 0x7e {
			return nil, fmt.Errorf("ownership: Config.Service must be printable ASCII, got %q", cfg.Service)
		}
	}
	if cfg.ChallengeTTL <= 0 {
		cfg.ChallengeTTL = DefaultChallengeTTL
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.Render == nil {
		cfg.Render = func(a storage.ExternalAccount) any { return AccountJSON(a) }
	}
	tel, err := newInstruments(&cfg)
	if err != nil {
		return nil, err
	}
	return &Service{cfg: cfg, tel: tel}, nil
}

// Account is the default client view of an external account.
type Account struct {
	ID                string          `json:"id"`
	CustomerID        string          `json:"customerId,omitempty"`
	Status            string          `json:"status"`
	PlatformAccountID string          `json:"platformAccountId,omitempty"`
	OwnershipType     string          `json:"ownershipType,omitempty"`
	Currency          string          `json:"currency"`
	AccountInfo       json.RawMessage `json:"accountInfo,omitempty"`
}

// AccountJSON is the default rendering of an account: its stored fields, with
// Info as accountInfo.
func AccountJSON(a storage.ExternalAccount) Account {
	out := Account{ID: a.ID, CustomerID: a.CustomerID, Status: string(a.Status), PlatformAccountID: a.PlatformAccountID,
		OwnershipType: a.OwnershipType, Currency: a.Currency}
	if json.Valid(a.Info) {
		out.AccountInfo = a.Info
	}
	return out
}

// Tree says which path tree a call came through: customer accounts have a
// customer, platform accounts have none. An account called through the other
// tree is not found there.
type Tree int

// Path trees.
const (
	// AnyTree skips the check, for hosts that route both trees alike.
	AnyTree Tree = iota
	CustomerTree
	PlatformTree
)

func (t Tree) holds(a *storage.ExternalAccount) bool {
	switch t {
	case CustomerTree:
		return a.CustomerID != ""
	case PlatformTree:
		return a.CustomerID == ""
	}
	return true
}

// Challenge is the 201 body of a challenge.
type Challenge struct {
	Method           string    `json:"method"`
	MessageToSign    string    `json:"messageToSign,omitempty"`
	VerificationLink string    `json:"verificationLink,omitempty"`
	Token            string    `json:"token,omitempty"`
	ExpiresAt        time.Time `json:"expiresAt"`
}

// load reads the account as seen through tree: 404 REFERENCE_NOT_FOUND when
// it does not exist there.
func load(ctx context.Context, tx storage.Tx, id string, tree Tree) (storage.ExternalAccount, error) {
	a, err := tx.ExternalAccounts().Get(ctx, id)
	if errors.Is(err, storage.ErrNotFound) || err == nil && !tree.holds(&a) {
		return storage.ExternalAccount{}, notFound(id)
	}
	return a, err
}

// loadHeld is load for a transaction that changes the account: it holds the
// account until the transaction ends, as the payout gate does (see
// [Service.CheckPayoutIn]), so status changes and payouts queue on the
// account alike. Callers hold the account before they touch its challenge,
// so transactions take the two in one order.
func loadHeld(ctx context.Context, tx storage.Tx, id string, tree Tree) (storage.ExternalAccount, error) {
	a, err := hold(ctx, tx, id)
	if err == nil && !tree.holds(&a) {
		return storage.ExternalAccount{}, notFound(id)
	}
	return a, err
}

// eligible reports why the account cannot be challenged with method, or nil.
func (s *Service) eligible(a *storage.ExternalAccount, method string) error {
	conflict := func(reason string) error {
		return apierror.New(apierror.Conflict, "ownership verification does not apply: %s", reason).WithDetail("reason", reason)
	}
	switch {
	case a.VaspName != "":
		return conflict("the wallet is custodial (vaspName is set)")
	case a.OwnershipType != FirstParty:
		return conflict("the account is not FIRST_PARTY")
	case a.Status == storage.StatusActive:
		return conflict("the account is already verified")
	case a.Status != storage.StatusPendingOwnershipVerification && a.Status != storage.StatusUnverified:
		return conflict("the account is " + string(a.Status))
	}
	if _, err := s.cfg.Verifiers.Lookup(a.AccountType); err != nil {
		if apierror.CodeOf(err) == apierror.Conflict {
			return err // Lightning: no signing key
		}
		return conflict("the account is not a self-custody wallet with a supported signature")
	}
	_, err := s.wallet(a) // a contract account's chain and verifier
	return err
}

// StartChallenge issues a challenge of method (WALLET_SIGNATURE or LIVENESS)
// for an eligible account: first party, self custody (no vaspName), a wallet
// type with a verifier, status PENDING_OWNERSHIP_VERIFICATION or UNVERIFIED.
// It supersedes any outstanding challenge and moves UNVERIFIED back to
// PENDING_OWNERSHIP_VERIFICATION (with its event), in one transaction.
// The [Config].Guard is asked about the account when it is first read,
// before its eligibility is decided and before a LIVENESS session starts.
//
// Errors: 400 INVALID_INPUT (method; LIVENESS without a provider), 404
// REFERENCE_NOT_FOUND (or a plain refusal of the guard), 409 CONFLICT with
// details.reason (not eligible).
func (s *Service) StartChallenge(ctx context.Context, accountID, method string, tree Tree) (*Challenge, error) {
	if method != MethodWalletSignature && method != MethodLiveness {
		return nil, apierror.InvalidField("method", apierror.OneOf(MethodWalletSignature, MethodLiveness), "unknown verification method")
	}
	if method == MethodLiveness && s.cfg.Liveness == nil {
		return nil, apierror.InvalidField("method", apierror.OneOf(MethodWalletSignature), "LIVENESS is not enabled on this service")
	}
	var acct storage.ExternalAccount
	err := s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		if acct, err = load(ctx, tx, accountID, tree); err != nil {
			return err
		}
		if err := s.admitNamed(ctx, &acct); err != nil {
			return err
		}
		return s.eligible(&acct, method)
	})
	if err != nil {
		return nil, apierror.From(err)
	}

	now := s.cfg.Clock().UTC()
	ch := storage.OwnershipChallenge{AccountID: accountID, Method: method, IssuedAt: now, ExpiresAt: now.Add(s.cfg.ChallengeTTL)}
	if ch.ID, err = storage.NewID(s.cfg.Rand, "Challenge"); err != nil {
		return nil, apierror.Internal(err)
	}
	if method == MethodWalletSignature {
		if ch.Nonce, err = nonce(s.cfg.Rand); err != nil {
			return nil, apierror.Internal(err)
		}
		ch.Message = s.message(&acct, ch.Nonce, ch.IssuedAt, ch.ExpiresAt)
	} else {
		sess, err := s.cfg.Liveness.Start(ctx, acct, ch.ExpiresAt)
		if err != nil {
			return nil, apierror.From(err)
		}
		ch.VerificationLink, ch.Token = sess.VerificationLink, sess.Token
	}

	err = s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		a, err := loadHeld(ctx, tx, accountID, tree)
		if err != nil {
			return err
		}
		if err := s.eligible(&a, method); err != nil {
			return err
		}
		if err := tx.Challenges().Put(ctx, &ch); err != nil {
			return err
		}
		if a.Status == storage.StatusUnverified {
			return s.transition(ctx, tx, &a, storage.StatusPendingOwnershipVerification, now)
		}
		return nil
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	return &Challenge{Method: method, MessageToSign: ch.Message, VerificationLink: ch.VerificationLink,
		Token: ch.Token, ExpiresAt: ch.ExpiresAt}, nil
}

// VerifyRequest is the body of the verify endpoint.
type VerifyRequest struct {
	Signature       string `json:"signature"`
	SignatureScheme string `json:"signatureScheme,omitempty"`
}

// Verify completes the outstanding WALLET_SIGNATURE challenge of an account.
// A valid signature submitted before expiresAt makes the account ACTIVE and
// returns it. An invalid or late signature makes it UNVERIFIED and
// returns 400 INVALID_INPUT with details.reason: the state change commits
// although the call fails, and a new challenge is needed. The challenge is
// consumed either way, exactly once: of concurrent verifies, one decides and
// the others answer 409.
//
// The signature is checked against the account as one transaction reads it,
// and the status is changed in a second one by compare-and-set on the
// version that was read: the account goes ACTIVE only when it is still
// exactly the account whose address the signature proved, and the
// EXTERNAL_ACCOUNT.STATUS_UPDATED event names that address (the "proof"
// member of its data: method and address). The UNVERIFIED event of a failed
// check has no proof. When the account changed in between, Verify
// answers 409 CONFLICT ("the account changed after the signature was
// checked") and changes nothing: the challenge stays outstanding and the
// status as it is. The client submits the same signature again; that call
// checks it against the account as it is then, and answers 409 CONFLICT
// ("the challenge was issued for other account details") when the address,
// type or network the challenge names is no longer the account's, in which
// case the client starts a new challenge and signs its message.
//
// The [Config].Guard is asked about the account in the transaction that
// first reads it, before its challenge is looked at: a refusal consumes
// nothing and changes no status.
//
// Errors: 400 INVALID_INPUT (missing signature, unknown scheme, invalid or
// expired signature), 404 REFERENCE_NOT_FOUND (or a plain refusal of the
// guard), 409 CONFLICT (no outstanding
// WALLET_SIGNATURE challenge, a challenge for other account details, an
// account changed during the call, or a contract account stored with a
// chain id other than its type's, see [ContractChainFor]; details.reason
// says which), 500
// INTERNAL_ERROR with details.reason when a network-backed verifier could
// not check the signature (a contract account's node failed or timed out):
// the signature was not judged, so nothing changes and the challenge stays
// outstanding.
//
// Verify commits in transactions of its own and refuses to run inside a
// host's (see [storage.Standalone]): an invalid signature's UNVERIFIED and
// its consumed challenge commit before the 400 answers, whatever the host
// does next. Called with a context bound to a host transaction it sends
// nothing and answers 500 INTERNAL_ERROR whose cause wraps
// [storage.ErrStandalone].
func (s *Service) Verify(ctx context.Context, accountID string, req VerifyRequest, tree Tree) (_ *storage.ExternalAccount, err error) {
	ctx = storage.Standalone(ctx, "ownership.Verify")
	ctx, o := s.tel.Begin(ctx, opVerify, s.tel.verify)
	o.Refused = signatureRefused
	defer func() { o.End(ctx, err) }()
	received := s.cfg.Clock()
	if req.Signature == "" {
		return nil, apierror.InvalidField("signature", apierror.Length(1, -1), "is required")
	}
	var acct storage.ExternalAccount
	var ch storage.OwnershipChallenge
	err = s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		if acct, err = load(ctx, tx, accountID, tree); err != nil {
			return err
		}
		if err := s.admitNamed(ctx, &acct); err != nil {
			return err
		}
		ch, err = tx.Challenges().Get(ctx, accountID)
		if errors.Is(err, storage.ErrNotFound) || err == nil && ch.Method != MethodWalletSignature {
			return noChallenge()
		}
		if err == nil && ch.Message != s.message(&acct, ch.Nonce, ch.IssuedAt, ch.ExpiresAt) {
			// The challenge names another address, type or network than
			// the account now has: no signature over it proves this one.
			const reason = "the challenge was issued for other account details (address, type or network); start a new challenge"
			return apierror.New(apierror.Conflict, "%s", reason).WithDetail("reason", reason)
		}
		return err
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	if acct.AccountType == AccountBitcoin {
		switch req.SignatureScheme {
		case "", SchemeBIP137, SchemeElectrum, SchemeBIP322:
		default:
			return nil, apierror.InvalidField("signatureScheme", apierror.OneOf(SchemeBIP137, SchemeElectrum, SchemeBIP322), "unknown signature scheme")
		}
	}

	var failure error
	if !received.Before(ch.ExpiresAt) {
		failure = apierror.New(apierror.InvalidInput, "the challenge expired; start a new one").WithDetail("reason", "challenge expired")
	} else {
		w, err := s.wallet(&acct)
		if err != nil {
			return nil, err
		}
		failure = s.cfg.Verifiers.Verify(ctx, w, []byte(ch.Message), Signature{Value: req.Signature, Scheme: req.SignatureScheme})
		if failure != nil && apierror.CodeOf(failure) != apierror.InvalidInput {
			return nil, apierror.From(failure) // the verifier failed, not the signature: nothing changes
		}
	}

	var out storage.ExternalAccount
	err = s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		a, err := loadHeld(ctx, tx, accountID, tree)
		if err != nil {
			return err
		}
		if a.Version != acct.Version {
			// The signature was checked against the account as read at
			// acct.Version; any change since (its address above all) voids
			// that check. The error rolls everything back: the challenge
			// stays outstanding and the status unchanged.
			return changedSinceCheck()
		}
		if _, err := tx.Challenges().Consume(ctx, accountID, ch.ID); err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				return noChallenge()
			}
			return err
		}
		if a.Status != storage.StatusPendingOwnershipVerification {
			return apierror.New(apierror.Conflict, "the account is %s, not PENDING_OWNERSHIP_VERIFICATION", a.Status)
		}
		to := storage.StatusActive
		if failure != nil {
			to = storage.StatusUnverified
		}
		// Only a valid signature proves the address; a failed check's
		// UNVERIFIED event names no proof.
		var p *proof
		if failure == nil {
			p = &proof{Method: MethodWalletSignature, Address: acct.Address}
		}
		if err := s.transitionProof(ctx, tx, &a, to, s.cfg.Clock().UTC(), p); err != nil {
			return err
		}
		out = a
		return nil
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	if failure != nil {
		return nil, failure
	}
	return &out, nil
}

// CompleteLiveness applies the provider's outcome of the account's
// outstanding LIVENESS challenge: passed makes it ACTIVE, failed UNVERIFIED.
// The challenge is consumed. It returns the updated account.
// An outcome that arrives after expiresAt counts as failed.
//
// CompleteLiveness commits in a transaction of its own and refuses to run
// inside a host's (see [storage.Standalone]), as [Service.Verify] does: a
// failed check's UNVERIFIED and consumed challenge stay recorded.
//
// The [Config].Guard is asked about the account as held, before its
// challenge is touched: a host that calls it from its provider's callback
// puts in ctx a principal its guard admits.
//
// Errors: 404 REFERENCE_NOT_FOUND (or a plain refusal of the guard), 409
// CONFLICT (no outstanding LIVENESS challenge, or the account is no longer
// pending), 500 INTERNAL_ERROR wrapping [storage.ErrStandalone] inside a
// host transaction.
func (s *Service) CompleteLiveness(ctx context.Context, accountID string, passed bool) (*storage.ExternalAccount, error) {
	ctx = storage.Standalone(ctx, "ownership.CompleteLiveness")
	now := s.cfg.Clock()
	var out storage.ExternalAccount
	err := s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		a, err := loadHeld(ctx, tx, accountID, AnyTree)
		if err != nil {
			return err
		}
		if err := s.admitNamed(ctx, &a); err != nil {
			return err
		}
		ch, err := tx.Challenges().Get(ctx, accountID)
		if errors.Is(err, storage.ErrNotFound) || err == nil && ch.Method != MethodLiveness {
			return apierror.New(apierror.Conflict, "no LIVENESS challenge is outstanding for the account")
		}
		if err != nil {
			return err
		}
		if _, err := tx.Challenges().Consume(ctx, accountID, ch.ID); err != nil {
			return err
		}
		if a.Status != storage.StatusPendingOwnershipVerification {
			return apierror.New(apierror.Conflict, "the account is %s, not PENDING_OWNERSHIP_VERIFICATION", a.Status)
		}
		to := storage.StatusUnverified
		if passed && now.Before(ch.ExpiresAt) {
			to = storage.StatusActive
		}
		if err := s.transition(ctx, tx, &a, to, now.UTC()); err != nil {
			return err
		}
		out = a
		return nil
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	return &out, nil
}

// transition changes the account's status by compare-and-set and writes the
// EXTERNAL_ACCOUNT.STATUS_UPDATED event in the same transaction.
func (s *Service) transition(ctx context.Context, tx storage.Tx, a *storage.ExternalAccount, to storage.AccountStatus, now time.Time) error {
	return s.transitionProof(ctx, tx, a, to, now, nil)
}

// transitionProof is transition for a change decided by a valid proof,
// which the event's data names; p nil is transition.
func (s *Service) transitionProof(ctx context.Context, tx storage.Tx, a *storage.ExternalAccount, to storage.AccountStatus, now time.Time, p *proof) error {
	a.Status, a.UpdatedAt = to, now
	if err := tx.ExternalAccounts().Update(ctx, a); err != nil {
		return err
	}
	return s.eventProof(ctx, tx, a, now, p)
}

// proof is the "proof" member of the data of a status event decided by a
// valid WALLET_SIGNATURE: the method and the address the signature proved
// (public data; the signature itself is never written). A failed check
// proves nothing and its event has no proof.
type proof struct {
	Method  string `json:"method"`
	Address string `json:"address"`
}

// event writes the EXTERNAL_ACCOUNT.STATUS_UPDATED event of a's current
// status to the outbox of tx.
func (s *Service) event(ctx context.Context, tx storage.Tx, a *storage.ExternalAccount, now time.Time) error {
	return s.eventProof(ctx, tx, a, now, nil)
}

// eventProof is event with the proof that decided the change, when p is not
// nil. The envelope is storage.NewEvent's, {"id","type","timestamp","data"};
// the proof is the last member of "data", the rendered account, which must
// then be a JSON object without a "proof" member of its own.
func (s *Service) eventProof(ctx context.Context, tx storage.Tx, a *storage.ExternalAccount, now time.Time, p *proof) error {
	var data any = s.cfg.Render(*a)
	if p != nil {
		d, err := withProof(data, p)
		if err != nil {
			return err
		}
		data = d
	}
	e, err := storage.NewEvent(s.cfg.Rand, EventStatusUpdated, a.ID, data, now)
	if err != nil {
		return err
	}
	return tx.Outbox().Append(ctx, &e)
}

// withProof returns the JSON of the rendered account data with p appended
// as its last member, "proof". It fails when data is not a JSON object or
// already has a "proof" member.
func withProof(data any, p *proof) (json.RawMessage, error) {
	obj, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(obj, &members); err != nil || members == nil {
		return nil, errors.New("ownership: the rendered account is not a JSON object, so the event cannot carry its proof in data")
	}
	if _, ok := members["proof"]; ok {
		return nil, errors.New("ownership: the rendered account has a \"proof\" member of its own, which the event's proof would duplicate")
	}
	member, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	// json.Marshal writes an object compact: its closing brace is its
	// last byte.
	out := obj[:len(obj)-1]
	if len(members) > 0 {
		out = append(out, ',')
	}
	out = append(append(append(out, `"proof":`...), member...), '}')
	return out, nil
}

// changedSinceCheck is the 409 of a verify whose account changed between
// the signature check and the status change.
func changedSinceCheck() error {
	const reason = "the account changed after the signature was checked; submit the signature again"
	return apierror.New(apierror.Conflict, "%s", reason).WithDetail("reason", reason)
}

func noChallenge() error {
	return apierror.New(apierror.Conflict, "no WALLET_SIGNATURE challenge is outstanding for the account; start one")
}
