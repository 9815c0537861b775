package sandbox

// SandboxVASPs are the VASPs (custodial platforms) of the sandbox's
// directory: an external wallet registered with one of these names as
// accountInfo.vaspName is custodial (ACTIVE from the start and not gated by
// ownership verification). Names are matched exactly; any other vaspName is
// 400 INVALID_INPUT (field accountInfo.vaspName). The directory is built
// from this list when the package loads; changing the slice later has no
// effect.
var SandboxVASPs = []string{"Coinbase", "Kraken", "Binance", "Sandbox VASP"}

// vaspDirectory is the sandbox's [ownership.VASPDirectory].
type vaspDirectory map[string]bool

// LookupVASP returns name when the sandbox directory lists it exactly.
func (d vaspDirectory) LookupVASP(name string) (string, bool) {
	if d[name] {
		return name, true
	}
	return "", false
}

var sandboxVASPs = func() vaspDirectory {
	d := vaspDirectory{}
	for _, n := range SandboxVASPs {
		d[n] = true
	}
	return d
}()
