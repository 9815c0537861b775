package ownership

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/storage"
)

// AddressValidator is implemented by verifiers that can check an address
// without a signature: the check is the one Verify runs on the address
// first, so an address that passes registration is one the verifier can
// later verify against. All built-in verifiers implement it.
type AddressValidator interface {
	// ValidateAddress returns nil when w.Address is a valid address for
	// w.AccountType on w.Network, or a 400 INVALID_INPUT *apierror.Error
	// with details.reason, caused by [ErrMalformed].
	ValidateAddress(w Wallet) error
}

// ValidateAddress checks w.Address with the verifier registered for
// w.AccountType when that verifier implements [AddressValidator]. Account
// types without a verifier (fiat accounts, Lightning invoices) and
// verifiers without address validation are accepted as they are: their
// identifiers are the host's to validate.
func (vs Verifiers) ValidateAddress(w Wallet) error {
	v, err := vs.Lookup(w.AccountType)
	if err != nil {
		return nil
	}
	if av, ok := v.(AddressValidator); ok {
		return av.ValidateAddress(w)
	}
	return nil
}

// VASPDirectory is the host's directory of VASPs: the custodial platforms
// (exchanges, hosted wallets) it recognizes for counterparty declarations.
// A wallet registered with a vaspName is custodial, which exempts it from
// the ownership rule ([Gated]), so registration takes the name from the
// directory and refuses one it does not list. Implementations are safe for
// concurrent use.
type VASPDirectory interface {
	// LookupVASP returns the directory's name of the VASP the client
	// named, stored as the account's VaspName, and false when the
	// directory does not list it.
	LookupVASP(name string) (string, bool)
}

// fiatTypes are the service's fiat account types.
var fiatTypes = map[string]bool{}

func init() {
	for _, t := range strings.Fields(`AED_ACCOUNT BDT_ACCOUNT BRL_ACCOUNT BWP_ACCOUNT CAD_ACCOUNT COP_ACCOUNT
		DKK_ACCOUNT EGP_ACCOUNT EUR_ACCOUNT GBP_ACCOUNT GHS_ACCOUNT GTQ_ACCOUNT HKD_ACCOUNT HTG_ACCOUNT IDR_ACCOUNT
		INR_ACCOUNT JMD_ACCOUNT KES_ACCOUNT MWK_ACCOUNT MXN_ACCOUNT MYR_ACCOUNT NGN_ACCOUNT PHP_ACCOUNT PKR_ACCOUNT
		RWF_ACCOUNT SGD_ACCOUNT SLV_ACCOUNT THB_ACCOUNT TZS_ACCOUNT UGX_ACCOUNT USD_ACCOUNT VND_ACCOUNT XAF_ACCOUNT
		XOF_ACCOUNT ZAR_ACCOUNT ZMW_ACCOUNT CNY_ACCOUNT SWIFT_ACCOUNT`) {
		fiatTypes[t] = true
	}
}

// IsFiat reports whether accountType is one of the service's fiat account
// types (USD_ACCOUNT, EUR_ACCOUNT, ..., SWIFT_ACCOUNT), spelled exactly.
// Any other type, including an unknown one, is not fiat.
func IsFiat(accountType string) bool { return fiatTypes[accountType] }

// KnownType reports whether registration accepts accountType: a fiat type
// ([IsFiat]), one of the Lightning spellings, or a type with a verifier in
// vs. Types are spelled exactly ("ethereum_wallet" is not ETHEREUM_WALLET).
func (vs Verifiers) KnownType(accountType string) bool {
	if IsFiat(accountType) || accountType == AccountLightning || accountType == AccountLightningAlias {
		return true
	}
	v, ok := vs[accountType]
	return ok && v != nil
}

// NewAccount is an external account to register with
// [Service.RegisterAccount].
type NewAccount struct {
	// ID is the account id, ExternalAccount:<uuid>; empty means a new one.
	ID string
	// CustomerID owns the account; empty for a platform account.
	CustomerID string
	// Tenant names the host's tenant (a platform) the account belongs to;
	// it never changes. The Config.Guard can compare it with the caller's
	// principal. A host with one tenant leaves it empty.
	Tenant string
	// AccountType is the accountInfo.accountType, e.g. ETHEREUM_WALLET.
	// Required.
	AccountType string
	// Address is the wallet address or account identifier. Required. For a
	// type with a verifier it must be valid for the chain and the service's
	// network (see [Verifiers.ValidateAddress]).
	Address string
	// Network is the chain network where the address type leaves it open
	// ("mainnet", "testnet", "signet" or "regtest"); when set it must be
	// the service's network. Empty means the service's network.
	Network string
	// Currency is the account's currency code (see [ValidCurrency]).
	// Required, and it must be a currency the payout policy pays out (one
	// with a maximum in Config.Payouts.MaxAmounts.ByCurrency): an account
	// no payout could reach is refused when it registers, not at its
	// first payout.
	Currency string
	// OwnershipType is [FirstParty], [ThirdParty] or empty. It is required
	// for a self-custody wallet (a type with a verifier, without VaspName).
	OwnershipType string
	// VaspName names the custodian of a custodial wallet; empty for self
	// custody. It must be listed by the service's [VASPDirectory]
	// (Config.VASPs), whose name for it is stored.
	VaspName string
	// PlatformAccountID is the host's own reference, stored as given.
	PlatformAccountID string
	// Info is the accountInfo object as the host stores it; it must be
	// valid JSON when set. An EVM wallet is registered as a contract
	// account (EIP-1271, ERC-6492) by the member
	// "contractAccount": {"chainId": <id>}, decoded strictly (see
	// [ContractVerifier]). The chain id must be the chain of the account
	// type on the service's network ([ContractChainFor]: 8453 for a
	// BASE_WALLET on mainnet), and the account type's verifier must be a
	// ContractVerifier. The starting status and the payout gate treat a
	// contract account like any other wallet.
	Info json.RawMessage
}

// StartingStatus is the status a new account starts in: a
// FIRST_PARTY self-custody wallet (no vaspName) whose type has a signature
// verifier in vs starts PENDING_OWNERSHIP_VERIFICATION, because its
// ownership must be proven; every other account starts ACTIVE.
func (vs Verifiers) StartingStatus(a *storage.ExternalAccount) storage.AccountStatus {
	if a.OwnershipType == FirstParty && a.VaspName == "" {
		if _, err := vs.Lookup(a.AccountType); err == nil {
			return storage.StatusPendingOwnershipVerification
		}
	}
	return storage.StatusActive
}

// RegisterAccount validates n and creates the account in its starting
// status (see [Verifiers.StartingStatus]), writing the
// EXTERNAL_ACCOUNT.STATUS_UPDATED event in the same transaction: either
// both commit or neither does. It returns the stored account.
//
// Errors: 400 INVALID_INPUT listing every invalid field
// (accountInfo.accountType: missing or not a known type, see
// [Verifiers.KnownType]; accountInfo.address; accountInfo.vaspName: not in
// the VASP directory; network; currency: missing, not a currency code or
// without a maximum in the payout policy, whose constraint's enum lists the
// policy's currencies;
// ownershipType; accountInfo; accountInfo.contractAccount and its
// chainId: malformed, on a type without contract accounts, not the chain
// of the type on the service's network, or a type without a
// [ContractVerifier]), 403 FORBIDDEN when the [Config].Guard refuses the
// new account (asked once it is validated, before it is stored; its
// *apierror.Error as it is), 409 CONFLICT when the id exists.
func (s *Service) RegisterAccount(ctx context.Context, n NewAccount) (*storage.ExternalAccount, error) {
	var out *storage.ExternalAccount
	err := s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		out, err = s.RegisterAccountIn(ctx, tx, n)
		return err
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	return out, nil
}

// RegisterAccountIn is [Service.RegisterAccount] inside the caller's
// transaction, for hosts that create other records with the account. The
// returned error is an *apierror.Error; return it from the transaction
// function to roll back.
//
// Errors: those of RegisterAccount.
func (s *Service) RegisterAccountIn(ctx context.Context, tx storage.Tx, n NewAccount) (*storage.ExternalAccount, error) {
	a, err := s.newAccount(n)
	if err != nil {
		return nil, err
	}
	a.Status = s.cfg.Verifiers.StartingStatus(&a)
	// The guard decides on the account about to be stored; a plain
	// refusal is 403, as there is no id to be unknown.
	if err := s.admit(ctx, &a, forbidden); err != nil {
		return nil, err
	}
	if err := tx.ExternalAccounts().Create(ctx, &a); err != nil {
		if errors.Is(err, storage.ErrDuplicate) {
			return nil, apierror.New(apierror.Conflict, "external account %s already exists", a.ID)
		}
		return nil, apierror.From(err)
	}
	if err := s.event(ctx, tx, &a, a.CreatedAt); err != nil {
		return nil, apierror.From(err)
	}
	return &a, nil
}

// newAccount validates n and builds the record, without its status.
func (s *Service) newAccount(n NewAccount) (storage.ExternalAccount, error) {
	var v apierror.Validation
	v.Check(n.AccountType != "", "accountInfo.accountType", nil, "is required")
	v.Check(n.AccountType == "" || s.cfg.Verifiers.KnownType(n.AccountType), "accountInfo.accountType", nil,
		"is not a known account type (a fiat *_ACCOUNT type, LIGHTNING or a wallet type with a verifier, spelled exactly)")
	v.Check(n.Address != "", "accountInfo.address", nil, "is required")
	v.Check(n.Currency != "", "currency", nil, "is required")
	switch _, paid := s.cfg.Payouts.MaxAmounts.ByCurrency[n.Currency]; {
	case n.Currency == "":
	case !ValidCurrency(n.Currency):
		v.Add("currency", nil, "is not a currency code ("+currencyRule+")")
	case !paid:
		// Refused here rather than at the first payout: the gate refuses
		// every payout in a currency without a maximum, so such an account
		// could never be paid.
		v.Add("currency", apierror.OneOf(s.cfg.Payouts.Currencies()...),
			"is not a currency of the payout policy (one with a single-transaction maximum)")
	}
	vasp := ""
	if n.VaspName != "" {
		var ok bool
		if s.cfg.VASPs != nil {
			vasp, ok = s.cfg.VASPs.LookupVASP(n.VaspName)
		}
		v.Check(ok && vasp != "", "accountInfo.vaspName", nil, "is not a VASP in the service's directory")
	}
	v.Check(n.OwnershipType == "" || n.OwnershipType == FirstParty || n.OwnershipType == ThirdParty,
		"ownershipType", apierror.OneOf(FirstParty, ThirdParty), "is not an ownership type")
	v.Check(len(n.Info) == 0 || json.Valid(n.Info), "accountInfo", nil, "is not valid JSON")
	network := s.cfg.Network
	if n.Network != "" {
		nw, ok := ParseNetwork(n.Network)
		switch {
		case !ok:
			v.Add("network", apierror.OneOf("mainnet", "testnet", "signet", "regtest"), "is not a network")
		case nw != s.cfg.Network:
			v.Add("network", apierror.OneOf(s.cfg.Network.String()), "the service runs on "+s.cfg.Network.String())
		}
	}
	if n.AccountType != "" && n.Address != "" && s.cfg.Verifiers.KnownType(n.AccountType) {
		if err := s.cfg.Verifiers.ValidateAddress(Wallet{AccountType: n.AccountType, Address: n.Address, Network: network}); err != nil {
			v.Add("accountInfo.address", nil, reasonOf(err))
		}
	}
	s.cfg.Verifiers.checkContractAccount(&v, n, s.cfg.Network)
	if _, err := s.cfg.Verifiers.Lookup(n.AccountType); err == nil && n.VaspName == "" {
		v.Check(n.OwnershipType != "", "ownershipType", apierror.OneOf(FirstParty, ThirdParty), "is required for self-custody wallets")
	}
	if err := v.Err(); err != nil {
		return storage.ExternalAccount{}, err
	}
	id := n.ID
	if id == "" {
		var err error
		if id, err = storage.NewID(s.cfg.Rand, "ExternalAccount"); err != nil {
			return storage.ExternalAccount{}, apierror.Internal(err)
		}
	}
	now := s.cfg.Clock().UTC()
	return storage.ExternalAccount{ID: id, CustomerID: n.CustomerID, Tenant: n.Tenant, PlatformAccountID: n.PlatformAccountID,
		OwnershipType: n.OwnershipType, Currency: n.Currency, AccountType: n.AccountType, Address: n.Address,
		Network: n.Network, VaspName: vasp, Info: append(json.RawMessage(nil), n.Info...), CreatedAt: now, UpdatedAt: now}, nil
}

// forbidden is the answer to a plain refusal of the guard of a new
// account, which has no id to be unknown.
func forbidden() error {
	return apierror.New(apierror.Forbidden, "the caller may not register this external account")
}

// reasonOf returns details.reason of a verifier's rejection, or its message.
func reasonOf(err error) string {
	var e *apierror.Error
	if errors.As(err, &e) && e.Reason() != "" {
		return e.Reason()
	}
	return err.Error()
}

// statuses are the account statuses [Service.SetStatus] accepts.
var statuses = []storage.AccountStatus{storage.StatusPending, storage.StatusActive, storage.StatusPendingOwnershipVerification,
	storage.StatusUnverified, storage.StatusUnderReview, storage.StatusInactive}

// SetStatus moves an account to status for a host-driven change (a
// compliance review, a deletion as INACTIVE, a manual approval). It holds
// the account for the transaction (as the payout gate does), updates it by
// compare-and-set on Version and writes the EXTERNAL_ACCOUNT.STATUS_UPDATED
// event in the same transaction. A move to the status the account already
// has changes nothing and writes no event. INACTIVE is final: an INACTIVE
// account cannot change status. It returns the account after the change.
//
// The [Config].Guard is asked about the account as held, before its
// status is looked at.
//
// Errors: 400 INVALID_INPUT (status), 404 REFERENCE_NOT_FOUND (or a plain
// refusal of the guard), 409 CONFLICT (the account is INACTIVE, or it
// changed concurrently).
func (s *Service) SetStatus(ctx context.Context, accountID string, status storage.AccountStatus) (*storage.ExternalAccount, error) {
	if err := validStatus(status); err != nil {
		return nil, err
	}
	var out *storage.ExternalAccount
	err := s.cfg.Store.Atomic(ctx, func(tx storage.Tx) error {
		var err error
		out, err = s.setStatus(ctx, tx, accountID, status)
		return err
	})
	if err != nil {
		return nil, apierror.From(err)
	}
	return out, nil
}

// SetStatusIn is SetStatus inside the transaction tx (of the service's
// store), for a host that changes the account together with its own
// records: the account is held until tx ends. Errors: those of SetStatus;
// the returned error is an *apierror.Error, to return from the transaction
// function to roll back.
func (s *Service) SetStatusIn(ctx context.Context, tx storage.Tx, accountID string, status storage.AccountStatus) (*storage.ExternalAccount, error) {
	if err := validStatus(status); err != nil {
		return nil, err
	}
	out, err := s.setStatus(ctx, tx, accountID, status)
	if err != nil {
		return nil, apierror.From(err)
	}
	return out, nil
}

// validStatus refuses a status the service does not know: 400 INVALID_INPUT.
func validStatus(status storage.AccountStatus) error {
	names := make([]string, len(statuses))
	for i, st := range statuses {
		names[i] = string(st)
		if st == status {
			return nil
		}
	}
	return apierror.InvalidField("status", apierror.OneOf(names...), "is not an account status")
}

// setStatus holds the account in tx and moves it to status.
func (s *Service) setStatus(ctx context.Context, tx storage.Tx, accountID string, status storage.AccountStatus) (*storage.ExternalAccount, error) {
	a, err := hold(ctx, tx, accountID)
	if err != nil {
		return nil, err
	}
	if err := s.admitNamed(ctx, &a); err != nil {
		return nil, err
	}
	if a.Status == status {
		return &a, nil
	}
	if a.Status == storage.StatusInactive {
		return nil, apierror.New(apierror.Conflict, "external account %s is INACTIVE", accountID).WithDetail("reason", "the account is INACTIVE")
	}
	if err := s.transition(ctx, tx, &a, status, s.cfg.Clock().UTC()); err != nil {
		return nil, err
	}
	return &a, nil
}
