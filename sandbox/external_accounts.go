package sandbox

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
	"github.com/walletgate/walletgate/storage"
)

// ExternalAccount is an external account record, as the service's API
// answers it.
type ExternalAccount struct {
	ID                            string          `json:"id"`
	CustomerID                    string          `json:"customerId,omitempty"`
	Status                        string          `json:"status"`
	PlatformAccountID             string          `json:"platformAccountId,omitempty"`
	OwnershipType                 string          `json:"ownershipType,omitempty"`
	Currency                      string          `json:"currency"`
	DefaultUMADepositAccount      bool            `json:"defaultUmaDepositAccount"`
	BeneficiaryVerificationStatus string          `json:"beneficiaryVerificationStatus,omitempty"`
	BeneficiaryVerifiedData       *VerifiedData   `json:"beneficiaryVerifiedData,omitempty"`
	AccountInfo                   json.RawMessage `json:"accountInfo"`
	CreatedAt                     time.Time       `json:"createdAt"`
	UpdatedAt                     time.Time       `json:"updatedAt"`
}

// VerifiedData is what the payment rail reports about the account holder.
type VerifiedData struct {
	FullName string `json:"fullName"`
}

// extMeta is what the simulator keeps about an external account beside the
// stored record.
type extMeta struct {
	CustomerID string        `json:"customerId,omitempty"`
	DefaultUMA bool          `json:"defaultUma,omitempty"`
	Status     string        `json:"status,omitempty"` // beneficiaryVerificationStatus
	Verified   *VerifiedData `json:"verified,omitempty"`
	Trusted    bool          `json:"trusted,omitempty"`
	Deleted    bool          `json:"deleted,omitempty"`
}

// ExternalAccountCreate is the body of POST /customers/external-accounts.
type ExternalAccountCreate struct {
	CustomerID               string          `json:"customerId"`
	Currency                 string          `json:"currency"`
	PlatformAccountID        string          `json:"platformAccountId,omitempty"`
	OwnershipType            string          `json:"ownershipType,omitempty"`
	DefaultUMADepositAccount bool            `json:"defaultUmaDepositAccount,omitempty"`
	AccountInfo              json.RawMessage `json:"accountInfo"`
}

// parsedExternal is a validated ExternalAccountCreate.
type parsedExternal struct {
	customerID, currency, platformAccountID, ownershipType string
	defaultUMA                                             bool
	info                                                   accountInfo
}

// parseExternalCreate is parseExternalCreateOn for mainnet.
func parseExternalCreate(body []byte) (parsedExternal, error) {
	return parseExternalCreateOn(body, ownership.Mainnet)
}

// parseExternalCreateOn decodes and validates a create body for a service on
// network, listing every invalid field.
func parseExternalCreateOn(body []byte, network ownership.Network) (parsedExternal, error) {
	return parseExternalCreateTree(body, network, false)
}

// parseExternalCreateTree is parseExternalCreateOn for the customer tree
// (customerId required) or, with platform, for POST
// /platform/external-accounts, where customerId must be absent or null and
// defaultUmaDepositAccount (a customer's setting) must not be true.
func parseExternalCreateTree(body []byte, network ownership.Network, platform bool) (parsedExternal, error) {
	var raw map[string]any
	if err := apierror.DecodeBytes(body, &raw); err != nil {
		return parsedExternal{}, err
	}
	if raw == nil {
		return parsedExternal{}, apierror.New(apierror.InvalidInput, "request body must be a JSON object")
	}
	var v apierror.Validation
	o := newObject(raw, "", &v)
	var customerID string
	if !platform {
		customerID = o.str("customerId", true)
	} else if o.has("customerId") {
		v.Add("customerId", nil, "must be absent or null for a platform account")
	}
	p := parsedExternal{
		customerID:        customerID,
		currency:          o.match("currency", true, currencyRe, apierror.Pattern(currencyRe.String()), "must be a currency code"),
		platformAccountID: o.text("platformAccountId", false, 255),
		ownershipType:     o.enum("ownershipType", false, ownership.FirstParty, ownership.ThirdParty),
		info:              o.parseAccountInfo(network),
	}
	p.defaultUMA, _ = o.boolean("defaultUmaDepositAccount")
	if platform {
		v.Check(!p.defaultUMA, "defaultUmaDepositAccount", nil, "is a customer setting; platform accounts cannot be one")
	}
	in := &p.info
	if p.currency != "" && !knownCurrency(p.currency) {
		// Refused here rather than at the first payout: an account in a
		// currency the sandbox has no table entry for could never be paid.
		v.Add("currency", apierror.OneOf(slices.Clone(currencyCodes)...), "is not a currency of the sandbox's currency table")
	} else if in.currency != "" && p.currency != "" && p.currency != in.currency {
		v.Add("currency", apierror.OneOf(in.currency), in.accountType+" accounts hold "+in.currency)
	}
	if in.keyWallet && in.accountType != "" {
		v.Check(p.ownershipType != "", "ownershipType", apierror.OneOf(ownership.FirstParty, ownership.ThirdParty), "is required for self-custody wallets")
		v.Check(p.ownershipType != ownership.ThirdParty || in.beneficiary != "", "accountInfo.beneficiary", nil,
			"is required for a THIRD_PARTY self-custody wallet")
	}
	if err := v.Err(); err != nil {
		return parsedExternal{}, err
	}
	return p, nil
}

// CreateExternalAccount validates req as POST /customers/external-accounts
// does and creates the account in the store (AccountType, Address = the
// wallet address or account identifier, Info = the normalized accountInfo)
// through ownership.Service.RegisterAccountIn, which validates wallet
// addresses with the verifiers' parsers and writes the status event with the
// account.
// A FIRST_PARTY self-custody wallet that holds a key (a wallet type other
// than Lightning, without vaspName) starts PENDING_OWNERSHIP_VERIFICATION;
// every other account starts ACTIVE. Fiat accounts get a beneficiary name
// verification chosen by the identifier's suffix (102 NOT_MATCHED, 103
// PARTIAL_MATCH, 104 PENDING, 106 UNSUPPORTED, 107 CHECKED_BY_RECEIVING_FI,
// otherwise MATCHED).
//
// A vaspName must name a VASP of [SandboxVASPs], exactly.
//
// Errors: 400 INVALID_INPUT listing every invalid field (a vaspName not in
// the directory, matched exactly and untrimmed, is accountInfo.vaspName; a
// currency not in the currency table, [Simulator.Currencies], is
// currency), 400 INVALID_BANK_ACCOUNT
// (identifier suffix 105), 404 USER_NOT_FOUND, 409 CONFLICT (the customer
// already has a defaultUmaDepositAccount).
func (s *Simulator) CreateExternalAccount(ctx context.Context, req ExternalAccountCreate) (*ExternalAccount, error) {
	body, err := marshalBody(req)
	if err != nil {
		return nil, err
	}
	p, err := parseExternalCreateOn(body, s.cfg.Network)
	if err != nil {
		return nil, err
	}
	return s.createExternal(ctx, p)
}

func (s *Simulator) createExternal(ctx context.Context, p parsedExternal) (*ExternalAccount, error) {
	meta := &extMeta{CustomerID: p.customerID, DefaultUMA: p.defaultUMA}
	if p.info.fiat {
		st, ok := nameVerification(p.info.identifier)
		if !ok {
			return nil, apierror.New(apierror.InvalidBankAccount, "the bank reports account %s as invalid", p.info.identifier).
				WithDetail("field", "accountInfo")
		}
		meta.Status, meta.Verified = st, verifiedName(st, p.info.beneficiary)
	}
	info, err := json.Marshal(p.info.info)
	if err != nil {
		return nil, apierror.Internal(err)
	}
	id, err := s.newID("ExternalAccount")
	if err != nil {
		return nil, err
	}
	n := ownership.NewAccount{ID: id, CustomerID: p.customerID, AccountType: p.info.accountType, Address: p.info.identifier,
		Currency: p.currency, OwnershipType: p.ownershipType, VaspName: p.info.vaspName, PlatformAccountID: p.platformAccountID,
		Info: info}
	// One transaction: the customer's record is held while the
	// default-deposit rule is checked and the account stored, so the rule
	// is one step on every replica.
	var rec *storage.ExternalAccount
	err = s.atomic(ctx, func(st *state) error {
		// A platform-tree account (no customerId) has no customer to check
		// and is never a default deposit account.
		if p.customerID != "" {
			if _, err := st.customer(p.customerID); err != nil {
				return err
			}
		}
		if p.defaultUMA && p.customerID != "" {
			other, err := st.defaultUMA(p.customerID)
			if err != nil {
				return err
			}
			if other != "" {
				return apierror.New(apierror.Conflict, "customer %s already has a default UMA deposit account (%s)", p.customerID, other).
					WithDetail("field", "defaultUmaDepositAccount")
			}
		}
		// The library sets the starting status (PENDING_OWNERSHIP_VERIFICATION
		// for a FIRST_PARTY self-custody wallet with a key, ACTIVE otherwise)
		// and writes the status event in the create's transaction.
		var err error
		if rec, err = s.own.RegisterAccountIn(ctx, st.tx, n); err != nil {
			return err
		}
		add(st, kindExternal, id, p.customerID, meta)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return externalView(rec, meta), nil
}

// defaultUMA returns the customer's default UMA deposit account, or "".
func (st *state) defaultUMA(customerID string) (string, error) {
	all, err := st.tx.Records().List(st.ctx, kindExternal, customerID)
	if err != nil {
		return "", err
	}
	for _, rec := range all {
		m, err := keep[extMeta](st, rec)
		if err != nil {
			return "", err
		}
		if m.DefaultUMA && !m.Deleted {
			return rec.Key, nil
		}
	}
	return "", nil
}

// verifiedName is the holder name the rail reports for a verification
// status.
func verifiedName(status, name string) *VerifiedData {
	switch status {
	case BeneficiaryMatched:
		return &VerifiedData{FullName: name}
	case BeneficiaryPartialMatch:
		if first, rest, ok := strings.Cut(name, " "); ok && first != "" {
			return &VerifiedData{FullName: first[:1] + ". " + rest}
		}
		return &VerifiedData{FullName: name + " Jr"}
	case BeneficiaryNotMatched:
		return &VerifiedData{FullName: "Sandbox Account Holder"}
	}
	return nil
}

func externalView(rec *storage.ExternalAccount, m *extMeta) *ExternalAccount {
	out := &ExternalAccount{ID: rec.ID, CustomerID: rec.CustomerID, Status: string(rec.Status), PlatformAccountID: rec.PlatformAccountID,
		OwnershipType: rec.OwnershipType, Currency: rec.Currency, AccountInfo: append(json.RawMessage(nil), rec.Info...),
		CreatedAt: rec.CreatedAt.UTC(), UpdatedAt: rec.UpdatedAt.UTC()}
	if m != nil {
		out.DefaultUMADepositAccount = m.DefaultUMA
		out.BeneficiaryVerificationStatus = m.Status
		if m.Verified != nil {
			v := *m.Verified
			out.BeneficiaryVerifiedData = &v
		}
	}
	return out
}

// GetExternalAccount returns an external account as stored (its status
// reflects ownership verification done by other packages on the same
// store): 404 REFERENCE_NOT_FOUND when there is none or it was deleted.
func (s *Simulator) GetExternalAccount(ctx context.Context, id string) (*ExternalAccount, error) {
	var out *ExternalAccount
	err := s.read(ctx, func(st *state) error {
		rec, err := externalIn(st, id)
		if err != nil {
			return err
		}
		m, err := st.metaOf(id)
		out = externalView(&rec, m)
		return err
	})
	return out, err
}

// DeleteExternalAccount deletes an external account (its stored status
// becomes INACTIVE through ownership.Service.SetStatus, which writes the
// EXTERNAL_ACCOUNT.STATUS_UPDATED event, and it is no longer found). A trusted beneficiary cannot
// be deleted: 409 BENEFICIARY_TRUSTED until it was untrusted and confirmed.
// Errors: 404 REFERENCE_NOT_FOUND, 409 BENEFICIARY_TRUSTED.
func (s *Simulator) DeleteExternalAccount(ctx context.Context, id string) error {
	// The library holds the account, sets INACTIVE and writes the status
	// event in the transaction that marks it deleted, with the trust rule
	// checked on the record it holds.
	return s.atomic(ctx, func(st *state) error {
		if _, err := externalIn(st, id); err != nil {
			return err
		}
		m, err := st.meta(id)
		if err != nil {
			return err
		}
		if m.Trusted {
			return apierror.New(apierror.BeneficiaryTrusted, "external account %s is a trusted beneficiary; untrust it (untrust, then untrust/confirm) before deleting it", id)
		}
		if _, err := s.own.SetStatusIn(ctx, st.tx, id, storage.StatusInactive); err != nil {
			return err
		}
		m.Deleted = true
		return nil
	})
}
