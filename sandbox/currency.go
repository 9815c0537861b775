package sandbox

import (
	"math/big"
	"slices"
	"strings"
)

// currency is a sandbox currency: its minor-unit exponent and a fixed rate
// in units per US dollar.
type currency struct {
	decimals int
	perUSD   string
}

// currencies are the currencies the simulator converts between at fixed,
// made-up sandbox rates (no fees).
var currencies = map[string]currency{
	"USD": {2, "1"}, "USDB": {6, "1"}, "USDC": {6, "1"}, "USDT": {6, "1"}, "BTC": {8, "0.00001"},
	"EUR": {2, "0.92"}, "GBP": {2, "0.79"}, "MXN": {2, "17.5"}, "BRL": {2, "5"}, "CAD": {2, "1.36"},
	"INR": {2, "83"}, "PHP": {2, "56"}, "NGN": {2, "1500"}, "KES": {2, "130"}, "GHS": {2, "15"},
	"ZAR": {2, "18.5"}, "AED": {2, "3.67"}, "BDT": {2, "110"}, "BWP": {2, "13.6"}, "COP": {2, "4000"},
	"DKK": {2, "6.9"}, "EGP": {2, "48"}, "GTQ": {2, "7.8"}, "HKD": {2, "7.8"}, "HTG": {2, "132"},
	"IDR": {2, "15700"}, "JMD": {2, "156"}, "MWK": {2, "1730"}, "MYR": {2, "4.7"}, "PKR": {2, "280"},
	"RWF": {0, "1300"}, "SGD": {2, "1.35"}, "THB": {2, "36"}, "TZS": {2, "2600"}, "UGX": {0, "3800"},
	"VND": {0, "25000"}, "XAF": {0, "605"}, "XOF": {0, "605"}, "ZMW": {2, "26"}, "CNY": {2, "7.2"},
	"SVC": {2, "8.75"},
}

// currencyCodes are the codes of currencies, sorted.
var currencyCodes = func() []string {
	out := make([]string, 0, len(currencies))
	for code := range currencies {
		out = append(out, code)
	}
	slices.Sort(out)
	return out
}()

// knownCurrency reports whether code is a currency of the sandbox's table
// (currencies), spelled exactly.
func knownCurrency(code string) bool {
	_, ok := currencies[code]
	return ok
}

// pow10 returns 10^n as a rational.
func pow10(n int) *big.Rat {
	return new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil))
}

// rate returns how many major units of to one major unit of from buys.
func rate(from, to string) (*big.Rat, bool) {
	f, ok1 := currencies[from]
	t, ok2 := currencies[to]
	if !ok1 || !ok2 {
		return nil, false
	}
	rf, _ := new(big.Rat).SetString(f.perUSD)
	rt, _ := new(big.Rat).SetString(t.perUSD)
	return new(big.Rat).Quo(rt, rf), true
}

// convert turns amount smallest units of from into smallest units of to,
// rounded down when roundUp is false and up otherwise. ok is false for an
// unknown currency or a result beyond int64.
func convert(amount int64, from, to string, roundUp bool) (int64, bool) {
	r, ok := rate(from, to)
	if !ok {
		return 0, false
	}
	v := new(big.Rat).SetInt64(amount)
	v.Quo(v, pow10(currencies[from].decimals))
	v.Mul(v, r)
	v.Mul(v, pow10(currencies[to].decimals))
	q, m := new(big.Int).QuoRem(v.Num(), v.Denom(), new(big.Int))
	if roundUp && m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return 0, false
	}
	return q.Int64(), true
}

// majorUnits returns n major units of cur in smallest units.
func majorUnits(n int64, cur string) int64 {
	v := n
	for range currencies[cur].decimals {
		if v > MaxAmount {
			return MaxAmount
		}
		v *= 10
	}
	return v
}

// rateFloat is the exchange rate as a JSON number.
func rateFloat(from, to string) float64 {
	r, ok := rate(from, to)
	if !ok {
		return 0
	}
	f, _ := r.Float64()
	return f
}

// Currency is one currency the simulator knows, with the limits of its
// payout gate in the currency's smallest unit.
type Currency struct {
	// Code is the currency code, as in amounts' currency fields.
	Code string
	// Decimals is the exponent of the smallest unit: one unit of the
	// currency is 10^Decimals smallest units (USD 2, USDC and USDB 6, BTC
	// 8). Every amount of the API is an integer of smallest units.
	Decimals int
	// VerificationThreshold is the smallest payout a first-party wallet
	// still pending ownership verification is refused (400
	// EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED): Config.VerificationThreshold
	// US dollars at the sandbox's rates, rounded down.
	VerificationThreshold int64
	// TransactionMaximum is the largest payout to an external account;
	// above it the answer is 400 TRANSACTION_SIZE_LIMIT_EXCEEDED
	// ([TransactionMaximumUSD] US dollars at the sandbox's rates, rounded
	// down).
	TransactionMaximum int64
}

// Currencies returns every currency the simulator knows, sorted by code,
// with the verification threshold and single-transaction maximum its
// payout gate applies. Amounts in any other currency are 400
// INVALID_CURRENCY.
func (s *Simulator) Currencies() []Currency {
	out := make([]Currency, 0, len(currencies))
	for code, c := range currencies {
		out = append(out, Currency{Code: code, Decimals: c.decimals,
			VerificationThreshold: s.gate.VerificationThresholds.ByCurrency[code],
			TransactionMaximum:    s.gate.MaxAmounts.ByCurrency[code]})
	}
	slices.SortFunc(out, func(a, b Currency) int { return strings.Compare(a.Code, b.Code) })
	return out
}
