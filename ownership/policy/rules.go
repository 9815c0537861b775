package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
)

// Actions a rule takes when it matches.
const (
	// Allow pays the payout, once the rule's step-up requirement (if any)
	// is met.
	Allow = "ALLOW"
	// Block refuses the payout with 403 PAYOUT_BLOCKED naming the rule.
	Block = "BLOCK"
	// RequireApproval holds the payout, once the rule's step-up
	// requirement (if any) is met, until the rule's Approval is given
	// ([Policy.Approve]); it then executes once.
	RequireApproval = "REQUIRE_APPROVAL"
)

// DestinationUMA is the destination type of a payout to a UMA address
// ([Payout].DestinationType), which rules match in destinationTypes.
const DestinationUMA = "UMA_ADDRESS"

// Scopes of a [Window].
const (
	// ScopeCustomer counts every payout of the customer.
	ScopeCustomer = "CUSTOMER"
	// ScopeSource counts the payouts from one source (the wallet or account
	// paid from) of the customer.
	ScopeSource = "SOURCE"
)

// Rules is a payout policy as data: windows that count payouts over time,
// and ordered rules of which the first that matches a payout decides it. It
// marshals to and from JSON as its field tags show; [Parse] reads it
// strictly. [New] validates it and refuses anything it does not know.
//
// A policy must end with a catch-all rule (an empty Match): what no other
// rule matches is decided by it, and a policy without one is refused, so no
// payout is ever left undecided. Amounts are in minor units of
// ReferenceCurrency: the payout's amount is converted with the host's
// [Rates] before any rule or window sees it.
type Rules struct {
	// ReferenceCurrency is the currency code of every amount of the rules
	// and windows (see [ownership.ValidCurrency]). Required.
	ReferenceCurrency string `json:"referenceCurrency"`
	// Windows are the rolling windows rules refer to by name.
	Windows []Window `json:"windows,omitempty"`
	// Rules are tried in order; the first that matches decides.
	Rules []Rule `json:"rules"`
}

// Window counts the payouts of a customer (or of one source of the
// customer) over the last Period. Every payout the policy allows counts in
// every window of its scope, whichever rule allowed it; a payout that is
// rolled back counts in none. A window bounds the total amount, the number
// of payouts, or both.
type Window struct {
	// Name is how rules refer to the window: 1 to 64 characters of
	// letters, digits, '-', '_' and '.'. Unique in the policy.
	Name string `json:"name"`
	// Scope is [ScopeCustomer] or [ScopeSource].
	Scope string `json:"scope"`
	// Period is the window's length, for example "24h" or "168h";
	// between one minute and 90 days.
	Period Duration `json:"period"`
	// MaxAmount bounds the total of the window's payouts, this one
	// included, in minor units of the reference currency.
	MaxAmount *int64 `json:"maxAmount,omitempty"`
	// MaxCount bounds the number of the window's payouts, this one
	// included.
	MaxCount *int64 `json:"maxCount,omitempty"`
}

// Rule is one rule of a policy: when Match matches a payout, Action decides
// it.
type Rule struct {
	// Name names the rule in decisions, refusals and events; same
	// spelling as a window's name, unique in the policy.
	Name string `json:"name"`
	// Match says which payouts the rule decides; the empty Match matches
	// every payout.
	Match Match `json:"match"`
	// Action is [Allow], [Block] or [RequireApproval].
	Action string `json:"action"`
	// Require is what the rule wants of the signer of the payout; nil
	// wants nothing more than the signed retry's own rules. Not with
	// [Block].
	Require *StepUp `json:"require,omitempty"`
	// Approval says who approves a payout the rule holds. Required with
	// [RequireApproval], and only with it.
	Approval *Approval `json:"approval,omitempty"`
}

// Approval is who approves a payout a [RequireApproval] rule holds, how
// many of them, and for how long it waits.
type Approval struct {
	// Count is how many different approvers must approve: 1 to 5.
	Count int `json:"count"`
	// SecondCredential lets a session of another credential of the same
	// wallet approve, as a signed operation of its own.
	SecondCredential bool `json:"secondCredential,omitempty"`
	// Operators are the operator principals the host names (as it
	// authenticates them) who may approve.
	Operators []string `json:"operators,omitempty"`
	// TTL is how long the payout waits; between one minute and 30 days.
	TTL Duration `json:"ttl"`
}

// Match is the condition of a rule: every member that is set must hold
// (they are joined by AND); the empty Match matches every payout.
type Match struct {
	// MinAmount matches payouts of at least this amount, in minor units
	// of the reference currency.
	MinAmount *int64 `json:"minAmount,omitempty"`
	// Currencies matches payouts in one of these currencies (the payout's
	// own currency, before conversion).
	Currencies []string `json:"currencies,omitempty"`
	// DestinationTypes matches payouts to external accounts of one of
	// these account types (ETHEREUM_WALLET, USD_ACCOUNT, ...).
	DestinationTypes []string `json:"destinationTypes,omitempty"`
	// NewDestinationWithin matches payouts to a destination whose
	// registration or last status change (an ownership proof, for
	// example) is more recent than this: a cool-off for new destinations.
	// It bounds what the destination receives for the whole period,
	// whatever was paid to it meanwhile: a first small payout does not end
	// it. A destination with no registration (a UMA address) is new for
	// this long after its first payout the policy sees.
	NewDestinationWithin *Duration `json:"newDestinationWithin,omitempty"`
	// NewDestinationMaxAmount, with NewDestinationWithin, narrows the
	// cool-off to an amount: the rule matches only payouts that would
	// bring what the new destination received within its cool-off, this
	// payout included, above this amount (in minor units of the reference
	// currency). Without it every payout to a new destination matches.
	NewDestinationMaxAmount *int64 `json:"newDestinationMaxAmount,omitempty"`
	// SecurityChangeWithin matches payouts from a wallet whose means of
	// authentication changed more recently than this: a credential added
	// to or removed from it, its tied email changed
	// ([storage.InternalAccount].SecurityChangedAt). A rule that blocks or
	// holds them gives the owner this long to hear of a change made with a
	// stolen session, as exchanges hold withdrawals after a change of
	// factors. A source that is no embedded wallet matches (the rule fails
	// closed).
	SecurityChangeWithin *Duration `json:"securityChangeWithin,omitempty"`
	// ExceedsWindows matches payouts that do not fit one of these
	// windows: the window's total or count, with this payout, would pass
	// its maximum.
	ExceedsWindows []string `json:"exceedsWindows,omitempty"`
}

// StepUp is what a rule wants of the signer of a payout it allows: the
// assurance of the credential the signing session was opened with and
// how recently the session was authenticated, read in the payout's
// transaction from the signed retry's authorization.
type StepUp struct {
	// CredentialTypes are the credential types whose assurance the
	// signing session's credential must carry (PASSKEY, EMAIL_OTP,
	// SMS_OTP, OAUTH); empty means any. A credential carries its own
	// type's, except one enrolled by a session of a weaker credential
	// within its security-change period, which carries that credential's
	// ([storage.Credential].AssuredAs): a passkey added by an EMAIL_OTP
	// session counts as EMAIL_OTP until its period ends. The sandbox
	// literal, which stands in for a key, meets no step-up.
	CredentialTypes []string `json:"credentialTypes,omitempty"`
	// MaxSessionAge is how long ago the ceremony that authenticated the
	// signing session (a code, a passkey assertion, an OpenID Connect
	// token) may have taken place; a refresh does not renew it. Nil means
	// any age.
	MaxSessionAge *Duration `json:"maxSessionAge,omitempty"`
}

// Duration is a time.Duration that reads and writes JSON as a Go duration
// string ("24h", "15m30s").
type Duration time.Duration

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string; a number or any other value is an
// error.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New("a duration is a string such as \"24h\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration", s)
	}
	*d = Duration(v)
	return nil
}

// Parse reads rules from JSON, strictly: member names are case-sensitive, a
// duplicate or unknown member (at any depth) is an error, and nothing
// follows the object. It does not validate them; [New] does.
func Parse(data []byte) (Rules, error) {
	var r Rules
	if err := apierror.DecodeStored(data, &r); err != nil {
		return Rules{}, fmt.Errorf("policy: reading rules: %w", err)
	}
	return r, nil
}

// Limits of a policy, checked by [New].
const (
	MinPeriod = time.Minute
	MaxPeriod = 90 * 24 * time.Hour
	MaxRules  = 256
)

// knownTypes decides which account types a rule may name: the fiat types,
// LIGHTNING and every wallet type walletgate verifies.
var knownTypes = ownership.DefaultVerifiers()

// credentialTypes are the credential types a step-up may name.
var credentialTypes = []string{"EMAIL_OTP", "SMS_OTP", "PASSKEY", "OAUTH"}

// validate checks r and returns the first problem, naming the rule or
// window and the member.
func (r *Rules) validate() error {
	if !ownership.ValidCurrency(r.ReferenceCurrency) {
		return fmt.Errorf("policy: referenceCurrency %q is not a currency code", r.ReferenceCurrency)
	}
	if len(r.Rules) == 0 {
		return errors.New("policy: no rules: a policy needs at least its final catch-all rule")
	}
	if len(r.Rules) > MaxRules || len(r.Windows) > MaxRules {
		return fmt.Errorf("policy: more than %d rules or windows", MaxRules)
	}
	windows := map[string]bool{}
	for i, w := range r.Windows {
		at := fmt.Sprintf("windows[%d]", i)
		if !validName(w.Name) {
			return fmt.Errorf("policy: %s.name %q is not 1 to 64 letters, digits, '-', '_' or '.'", at, w.Name)
		}
		if windows[w.Name] {
			return fmt.Errorf("policy: %s.name %q is the name of an earlier window", at, w.Name)
		}
		windows[w.Name] = true
		if w.Scope != ScopeCustomer && w.Scope != ScopeSource {
			return fmt.Errorf("policy: window %q: scope %q is not %s or %s", w.Name, w.Scope, ScopeCustomer, ScopeSource)
		}
		if p := time.Duration(w.Period); p < MinPeriod || p > MaxPeriod {
			return fmt.Errorf("policy: window %q: period %v is not between %v and %v", w.Name, p, MinPeriod, MaxPeriod)
		}
		if w.MaxAmount == nil && w.MaxCount == nil {
			return fmt.Errorf("policy: window %q bounds nothing: set maxAmount, maxCount or both", w.Name)
		}
		if (w.MaxAmount != nil && *w.MaxAmount < 0) || (w.MaxCount != nil && *w.MaxCount < 0) {
			return fmt.Errorf("policy: window %q: a maximum is negative", w.Name)
		}
	}
	rules := map[string]bool{}
	for i, rule := range r.Rules {
		at := fmt.Sprintf("rules[%d]", i)
		if !validName(rule.Name) {
			return fmt.Errorf("policy: %s.name %q is not 1 to 64 letters, digits, '-', '_' or '.'", at, rule.Name)
		}
		if rules[rule.Name] {
			return fmt.Errorf("policy: %s.name %q is the name of an earlier rule", at, rule.Name)
		}
		rules[rule.Name] = true
		switch rule.Action {
		case Allow:
		case Block:
			if rule.Require != nil {
				return fmt.Errorf("policy: rule %q blocks, so it has no step-up requirement to make", rule.Name)
			}
		case RequireApproval:
			if err := rule.Approval.validate(rule.Name); err != nil {
				return err
			}
		default:
			return fmt.Errorf("policy: rule %q: action %q is not %s, %s or %s", rule.Name, rule.Action, Allow, Block, RequireApproval)
		}
		if rule.Action != RequireApproval && rule.Approval != nil {
			return fmt.Errorf("policy: rule %q: approval is only for action %s", rule.Name, RequireApproval)
		}
		m := rule.Match
		if m.MinAmount != nil && *m.MinAmount < 0 {
			return fmt.Errorf("policy: rule %q: minAmount is negative", rule.Name)
		}
		for _, c := range m.Currencies {
			if !ownership.ValidCurrency(c) {
				return fmt.Errorf("policy: rule %q: currencies: %q is not a currency code", rule.Name, c)
			}
		}
		for _, t := range m.DestinationTypes {
			if t != DestinationUMA && !knownTypes.KnownType(t) {
				return fmt.Errorf("policy: rule %q: destinationTypes: %q is not an account type", rule.Name, t)
			}
		}
		if d := m.NewDestinationWithin; d != nil && (time.Duration(*d) < MinPeriod || time.Duration(*d) > MaxPeriod) {
			return fmt.Errorf("policy: rule %q: newDestinationWithin %v is not between %v and %v", rule.Name, time.Duration(*d), MinPeriod, MaxPeriod)
		}
		if a := m.NewDestinationMaxAmount; a != nil {
			if m.NewDestinationWithin == nil {
				return fmt.Errorf("policy: rule %q: newDestinationMaxAmount bounds a cool-off, so it needs newDestinationWithin", rule.Name)
			}
			if *a < 0 {
				return fmt.Errorf("policy: rule %q: newDestinationMaxAmount is negative", rule.Name)
			}
		}
		if d := m.SecurityChangeWithin; d != nil && (time.Duration(*d) < MinPeriod || time.Duration(*d) > MaxPeriod) {
			return fmt.Errorf("policy: rule %q: securityChangeWithin %v is not between %v and %v", rule.Name, time.Duration(*d), MinPeriod, MaxPeriod)
		}
		for _, w := range m.ExceedsWindows {
			if !windows[w] {
				return fmt.Errorf("policy: rule %q: exceedsWindows names %q, which is not a window", rule.Name, w)
			}
		}
		if s := rule.Require; s != nil {
			if len(s.CredentialTypes) == 0 && s.MaxSessionAge == nil {
				return fmt.Errorf("policy: rule %q: require asks nothing: set credentialTypes, maxSessionAge or both", rule.Name)
			}
			for _, c := range s.CredentialTypes {
				if !slices.Contains(credentialTypes, c) {
					return fmt.Errorf("policy: rule %q: require.credentialTypes: %q is not one of %v", rule.Name, c, credentialTypes)
				}
			}
			if a := s.MaxSessionAge; a != nil && time.Duration(*a) <= 0 {
				return fmt.Errorf("policy: rule %q: require.maxSessionAge is not positive", rule.Name)
			}
		}
		if i < len(r.Rules)-1 && m.empty() {
			return fmt.Errorf("policy: rule %q matches every payout, so the rules after it could never decide; make it the last", rule.Name)
		}
	}
	if last := r.Rules[len(r.Rules)-1]; !last.Match.empty() {
		return fmt.Errorf("policy: the last rule %q is not a catch-all (an empty match): a payout no rule matches would be undecided", last.Name)
	}
	return nil
}

// validate checks the approval of rule.
func (a *Approval) validate(rule string) error {
	switch {
	case a == nil:
		return fmt.Errorf("policy: rule %q requires approval but says nothing of who approves: set approval", rule)
	case a.Count < 1 || a.Count > 5:
		return fmt.Errorf("policy: rule %q: approval.count %d is not 1 to 5", rule, a.Count)
	case !a.SecondCredential && len(a.Operators) == 0:
		return fmt.Errorf("policy: rule %q: approval names no approver: set secondCredential, operators or both", rule)
	case time.Duration(a.TTL) < MinPeriod || time.Duration(a.TTL) > 30*24*time.Hour:
		return fmt.Errorf("policy: rule %q: approval.ttl %v is not between %v and %v", rule, time.Duration(a.TTL), MinPeriod, 30*24*time.Hour)
	}
	for _, o := range a.Operators {
		if !validName(o) && !validOperator(o) {
			return fmt.Errorf("policy: rule %q: approval.operators: %q is not 1 to 128 printable ASCII characters", rule, o)
		}
	}
	if n := len(a.Operators); a.Count > n && !a.SecondCredential {
		return fmt.Errorf("policy: rule %q: approval.count %d is more than its %d approvers", rule, a.Count, n)
	}
	return nil
}

// validOperator reports whether s is 1 to 128 printable ASCII characters
// without spaces (an email address, a principal id).
func validOperator(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

func (m *Match) empty() bool {
	return m.MinAmount == nil && len(m.Currencies) == 0 && len(m.DestinationTypes) == 0 &&
		m.NewDestinationWithin == nil && m.NewDestinationMaxAmount == nil && m.SecurityChangeWithin == nil &&
		len(m.ExceedsWindows) == 0
}

// validName reports whether s is 1 to 64 ASCII letters, digits, '-', '_'
// and '.'.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// clone returns a deep copy of r, so a policy never shares memory with the
// rules a host may later change.
func (r Rules) clone() Rules {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // unreachable: Rules marshals
	}
	var out Rules
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}
