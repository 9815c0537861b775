package sandbox

import (
	"errors"
	"regexp"
	"strings"

	"github.com/walletgate/walletgate/apierror"
	"github.com/walletgate/walletgate/ownership"
)

// Wallet and network account types of accountInfo.accountType.
var walletTypes = []string{"BASE_WALLET", "ETHEREUM_WALLET", "POLYGON_WALLET", "PLASMA_WALLET", "SOLANA_WALLET",
	"SPARK_WALLET", "TRON_WALLET", "LIGHTNING", "LIGHTNING_ACCOUNT"}

// Fiat account types of accountInfo.accountType.
var fiatTypes = []string{"AED_ACCOUNT", "BDT_ACCOUNT", "BRL_ACCOUNT", "BWP_ACCOUNT", "CAD_ACCOUNT", "COP_ACCOUNT",
	"DKK_ACCOUNT", "EGP_ACCOUNT", "EUR_ACCOUNT", "GBP_ACCOUNT", "GHS_ACCOUNT", "GTQ_ACCOUNT", "HKD_ACCOUNT",
	"HTG_ACCOUNT", "IDR_ACCOUNT", "INR_ACCOUNT", "JMD_ACCOUNT", "KES_ACCOUNT", "MWK_ACCOUNT", "MXN_ACCOUNT",
	"MYR_ACCOUNT", "NGN_ACCOUNT", "PHP_ACCOUNT", "PKR_ACCOUNT", "RWF_ACCOUNT", "SGD_ACCOUNT", "SLV_ACCOUNT",
	"THB_ACCOUNT", "TZS_ACCOUNT", "UGX_ACCOUNT", "USD_ACCOUNT", "VND_ACCOUNT", "XAF_ACCOUNT", "XOF_ACCOUNT",
	"ZAR_ACCOUNT", "ZMW_ACCOUNT", "CNY_ACCOUNT", "SWIFT_ACCOUNT"}

var accountTypes = append(append([]string{}, fiatTypes...), walletTypes...)

// fiatField is one member of a fiat account part.
type fiatField struct {
	name     string
	required bool
	re       *regexp.Regexp
	enum     []string
}

// fiatSpec is a currency-specific account part: its currency (empty for
// SWIFT, where the request's currency decides), the member holding the
// account identifier the magic suffixes read, and its members.
type fiatSpec struct {
	currency string
	id       string
	fields   []fiatField
}

var (
	digits   = func(lo, hi string) *regexp.Regexp { return regexp.MustCompile(`^[0-9]{` + lo + `,` + hi + `}$`) }
	alnumRe  = regexp.MustCompile(`^[A-Za-z0-9]{4,34}$`)
	swiftRe  = regexp.MustCompile(`^[A-Z]{6}[A-Z0-9]{2}([A-Z0-9]{3})?$`)
	ibanRe   = regexp.MustCompile(`^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$`)
	vpaRe    = regexp.MustCompile(`^[A-Za-z0-9._-]{2,256}@[A-Za-z]{2,64}$`)
	anyRe    = regexp.MustCompile(`^\S.{0,139}$`)
	bolt11Re = regexp.MustCompile(`^ln(bc|tb|bcrt|tbs)[0-9a-z]{20,1000}$`)
	bolt12Re = regexp.MustCompile(`^lno1[0-9a-z]{20,1000}$`)
	lnAddrRe = regexp.MustCompile(`^[a-z0-9._+-]{1,64}@[a-z0-9.-]+\.[a-z]{2,}$`)
)

var fiatSpecs = map[string]fiatSpec{
	"USD_ACCOUNT": {"USD", "accountNumber", []fiatField{{"accountNumber", true, digits("4", "17"), nil},
		{"routingNumber", true, digits("9", "9"), nil}, {"accountCategory", false, nil, []string{"CHECKING", "SAVINGS"}},
		{"bankName", false, anyRe, nil}}},
	"EUR_ACCOUNT": {"EUR", "iban", []fiatField{{"iban", true, ibanRe, nil}, {"swiftCode", false, swiftRe, nil}, {"bankName", false, anyRe, nil}}},
	"GBP_ACCOUNT": {"GBP", "accountNumber", []fiatField{{"accountNumber", true, digits("8", "8"), nil}, {"sortCode", true, digits("6", "6"), nil}}},
	"MXN_ACCOUNT": {"MXN", "clabeNumber", []fiatField{{"clabeNumber", true, digits("18", "18"), nil}}},
	"BRL_ACCOUNT": {"BRL", "pixKey", []fiatField{{"pixKey", true, anyRe, nil},
		{"pixKeyType", true, nil, []string{"CPF", "CNPJ", "EMAIL", "PHONE", "RANDOM"}}, {"taxId", false, anyRe, nil}}},
	"INR_ACCOUNT": {"INR", "vpa", []fiatField{{"vpa", true, vpaRe, nil}}},
	"CAD_ACCOUNT": {"CAD", "accountNumber", []fiatField{{"accountNumber", true, digits("7", "12"), nil},
		{"institutionNumber", true, digits("3", "3"), nil}, {"transitNumber", true, digits("5", "5"), nil}}},
	"SWIFT_ACCOUNT": {"", "accountNumber", []fiatField{{"accountNumber", true, alnumRe, nil}, {"swiftCode", true, swiftRe, nil},
		{"bankName", false, anyRe, nil}}},
}

// genericFiat is the account part of the other fiat currencies.
func genericFiat(accountType string) fiatSpec {
	cur := strings.TrimSuffix(accountType, "_ACCOUNT")
	if cur == "SLV" {
		cur = "USD" // El Salvador's accounts are in US dollars
	}
	return fiatSpec{cur, "accountNumber", []fiatField{{"accountNumber", true, alnumRe, nil}, {"bankName", false, anyRe, nil},
		{"bankCode", false, anyRe, nil}, {"branchCode", false, anyRe, nil}, {"swiftCode", false, swiftRe, nil}}}
}

// accountInfo is a validated accountInfo object.
type accountInfo struct {
	accountType string // LIGHTNING_ACCOUNT is stored as LIGHTNING
	identifier  string // the account identifier or wallet address
	currency    string // fixed by a fiat type, "" otherwise
	fiat        bool
	keyWallet   bool // a wallet whose address holds a key (ownership applies)
	vaspName    string
	beneficiary string // the beneficiary's name, "" when none
	info        map[string]any
}

// parseAccountInfo validates the polymorphic accountInfo: accountType is one
// of fiatTypes or walletTypes and selects the fields that are required;
// wallet addresses must belong to network where the chain encodes one.
func (o object) parseAccountInfo(network ownership.Network) accountInfo {
	a, ok := o.obj("accountInfo", true)
	if !ok {
		return accountInfo{}
	}
	t := a.enum("accountType", true, accountTypes...)
	out := accountInfo{accountType: t, info: map[string]any{"accountType": t}}
	switch {
	case t == "":
	case t == "LIGHTNING" || t == "LIGHTNING_ACCOUNT":
		out.accountType, out.info["accountType"] = "LIGHTNING", "LIGHTNING"
		a.lightning(&out)
	case contains(walletTypes, t):
		a.wallet(&out, network)
	default:
		spec, ok := fiatSpecs[t]
		if !ok {
			spec = genericFiat(t)
		}
		a.fiat(spec, &out)
	}
	return out
}

func (o object) put(out *accountInfo, name, value string) {
	if value != "" {
		out.info[name] = value
	}
}

func (o object) lightning(out *accountInfo) {
	n := 0
	for _, f := range []struct {
		name string
		re   *regexp.Regexp
	}{{"invoice", bolt11Re}, {"bolt12", bolt12Re}, {"lightningAddress", lnAddrRe}} {
		if !o.has(f.name) {
			continue
		}
		n++
		v := strings.ToLower(o.str(f.name, true))
		if v != "" && !f.re.MatchString(v) {
			o.v.Add(o.field(f.name), apierror.Pattern(f.re.String()), "is not a valid "+f.name)
			continue
		}
		o.put(out, f.name, v)
		out.identifier = v
	}
	if n != 1 {
		o.v.Add(o.field("invoice"), nil, "give exactly one of invoice, bolt12 and lightningAddress")
	}
}

func (o object) wallet(out *accountInfo, network ownership.Network) {
	addr := o.str("address", true)
	if addr != "" {
		if problem := checkAddress(out.accountType, addr, network); problem != "" {
			o.v.Add(o.field("address"), nil, problem)
		} else {
			o.put(out, "address", addr)
			out.identifier = addr
		}
	}
	if raw, ok := o.m["contractAccount"]; ok {
		// Kept as given: the ownership service decodes it strictly when
		// it registers the account (see Config.ContractWallets).
		out.info["contractAccount"] = raw
	}
	// A vaspName names a VASP of the directory exactly: it is passed on as
	// sent, untrimmed, so " Coinbase" or "Coinbase\n" is refused as not
	// listed (or as a control character) rather than read as Coinbase.
	out.vaspName = o.exactText("vaspName", false, 255)
	o.put(out, "vaspName", out.vaspName)
	out.keyWallet = out.vaspName == ""
	if b, ok := o.obj("beneficiary", false); ok {
		out.info["beneficiary"], out.beneficiary = b.beneficiary(true)
	}
}

func (o object) fiat(spec fiatSpec, out *accountInfo) {
	out.fiat, out.currency = true, spec.currency
	for _, f := range spec.fields {
		var v string
		switch {
		case f.enum != nil:
			v = o.enum(f.name, f.required, f.enum...)
		default:
			v = o.match(f.name, f.required, f.re, apierror.Pattern(f.re.String()), "is not a valid "+f.name)
		}
		o.put(out, f.name, v)
		if f.name == spec.id {
			out.identifier = v
		}
	}
	if b, ok := o.obj("beneficiary", true); ok {
		out.info["beneficiary"], out.beneficiary = b.beneficiary(false)
	}
}

// beneficiary validates a beneficiary object discriminated by
// beneficiaryType and returns it with the name it carries. Wallet
// beneficiaries require countryOfResidence for individuals.
func (o object) beneficiary(wallet bool) (map[string]any, string) {
	out := map[string]any{}
	put := func(name, v string) {
		if v != "" {
			out[name] = v
		}
	}
	t := o.enum("beneficiaryType", true, CustomerIndividual, CustomerBusiness)
	put("beneficiaryType", t)
	name := ""
	switch t {
	case CustomerIndividual:
		name = o.text("fullName", true, 255)
		put("fullName", name)
		put("countryOfResidence", o.country("countryOfResidence", wallet))
		put("nationality", o.country("nationality", false))
	case CustomerBusiness:
		name = o.text("legalName", true, 255)
		put("legalName", name)
		put("registrationNumber", o.text("registrationNumber", false, 64))
		put("taxId", o.text("taxId", false, 64))
		put("countryOfResidence", o.country("countryOfResidence", false))
	}
	if addr := o.address("address", false); addr != nil {
		out["address"] = addr
	}
	return out, name
}

// walletVerifiers are the library's verifiers, whose address parsers
// validate wallet addresses (one parser per chain, shared with ownership
// verification).
var walletVerifiers = ownership.DefaultVerifiers()

// checkAddress returns what is wrong with a wallet address on network, or "".
// It runs the ownership verifiers' own address check
// ([ownership.Verifiers.ValidateAddress]).
func checkAddress(accountType, addr string, network ownership.Network) string {
	err := walletVerifiers.ValidateAddress(ownership.Wallet{AccountType: accountType, Address: addr, Network: network})
	if err == nil {
		return ""
	}
	var e *apierror.Error
	if errors.As(err, &e) && e.Reason() != "" {
		return e.Reason()
	}
	return err.Error()
}
