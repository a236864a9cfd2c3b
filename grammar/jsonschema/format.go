package jsonschema

import (
	"strconv"
	"strings"

	santhosh "github.com/santhosh-tekuri/jsonschema/v5"
)

// Formats reins compiles, as regular expressions (Go syntax, matched in
// full). Each language lies within both the format's RFC and what the
// validator (santhosh-tekuri/jsonschema) accepts, so no output fails
// validation; where the two differ, or an exact bound would make the
// grammar huge, the expression keeps to the narrower side:
//
//   - time: no leap second (23:59:60 is valid only at some offsets).
//   - hostname: at most 8 labels of at most 29 characters, so that the
//     whole stays under 253; no label begins or ends with a hyphen, or
//     has hyphens third and fourth (which keeps out IDNA's "xn--" labels
//     and the reserved "??--" ones, whose rules a grammar cannot check).
//   - email: a dot-atom local part (at most 64 characters: up to 4 atoms
//     of at most 16) at a hostname of at most 4 such labels; no quoted
//     local parts or address literals.
//   - ipv6: the forms RFC 3986 lists (with "::" and an IPv4 tail), no
//     zone identifiers; IPv4 parts without leading zeros.
//   - uri, uri-reference: scheme, host (labels, or an IPv4 address),
//     port, path, query and fragment of unreserved, sub-delimiter and
//     percent-encoded characters; no user information, no IPv6 hosts.
//
// Formats the validator does not know (custom ones such as "path") are
// annotations, as the specification says, and constrain nothing; formats
// it knows and reins does not (regex, json-pointer, ...) are refused.
var formats = func() map[string]string {
	const (
		d2      = `[0-9]{2}`
		year    = `[0-9]{4}`
		leap    = `(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)`
		monthDy = `(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))`
		date    = `(?:` + year + `-` + monthDy + `|` + leap + `-02-29)`
		hh      = `(?:[01][0-9]|2[0-3])`
		mm      = `[0-5][0-9]`
		time    = hh + `:` + mm + `:` + mm + `(?:\.[0-9]+)?(?:[Zz]|[+-]` + hh + `:` + mm + `)`
		alnum   = `[A-Za-z0-9]`
		anyc    = `[A-Za-z0-9-]`
		label   = alnum + `(?:` + alnum + `|` + anyc + alnum + `|` + anyc + anyc + alnum + `|` + anyc + `(?:` + alnum + anyc + `|-` + alnum + `)` + anyc + `{0,24}` + alnum + `)?`
		host    = label + `(?:\.` + label + `){0,7}`
		atext   = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
		octet   = `(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])`
		ipv4    = octet + `(?:\.` + octet + `){3}`
		h16     = `[0-9A-Fa-f]{1,4}`
		ls32    = `(?:` + h16 + `:` + h16 + `|` + ipv4 + `)`
		pchar   = `(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})`
		pnc     = `(?:[A-Za-z0-9._~!$&'()*+,;=@-]|%[0-9A-Fa-f]{2})` // pchar but ':'
		auth    = `//(?:` + host + `|` + ipv4 + `)(?::[0-9]{1,5})?`
		tail    = `(?:\?(?:` + pchar + `|[/?])*)?(?:#(?:` + pchar + `|[/?])*)?`
		scheme  = `[A-Za-z][A-Za-z0-9+.-]*:`
		absPath = `(?:/` + pchar + `*)*`
		rootles = pchar + `+(?:/` + pchar + `*)*`
		dur     = `[0-9]+`
	)
	dt := `(?:` + dur + `Y(?:` + dur + `M(?:` + dur + `D)?)?|` + dur + `M(?:` + dur + `D)?|` + dur + `D)`
	// IPv6 as RFC 3986 writes it: eight groups, or "::" standing for
	// one or more zero groups, the last two perhaps an IPv4 address.
	h16c := func(n int) string { return `(?:` + h16 + `:){` + strconv.Itoa(n) + `}` }
	ipv6 := []string{h16c(6) + ls32, `::` + h16c(5) + ls32}
	for n := range 7 { // at most n+1 groups before "::"
		before := `(?:` + h16 + `(?::` + h16 + `){0,` + strconv.Itoa(n) + `})?::`
		switch {
		case n < 4:
			ipv6 = append(ipv6, before+h16c(4-n)+ls32)
		case n == 4:
			ipv6 = append(ipv6, before+ls32)
		case n == 5:
			ipv6 = append(ipv6, before+h16)
		default:
			ipv6 = append(ipv6, before)
		}
	}
	tm := `T(?:` + dur + `H(?:` + dur + `M(?:` + dur + `S)?)?|` + dur + `M(?:` + dur + `S)?|` + dur + `S)`
	return map[string]string{
		"date-time":     date + `[Tt]` + time,
		"date":          date,
		"time":          time,
		"duration":      `P(?:` + dur + `W|` + dt + `(?:` + tm + `)?|` + tm + `)`,
		"hostname":      host,
		"email":         atext + `{1,16}(?:\.` + atext + `{1,15}){0,3}@` + label + `(?:\.` + label + `){0,3}`,
		"ipv4":          ipv4,
		"ipv6":          `(?:` + strings.Join(ipv6, `|`) + `)`,
		"uuid":          `[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}`,
		"uri":           scheme + `(?:` + auth + absPath + `|` + rootles + `)?` + tail,
		"uri-reference": `(?:` + scheme + `(?:` + auth + absPath + `|` + rootles + `)?|` + auth + absPath + `|/(?:` + rootles + `)?|` + pnc + `+(?:/` + pchar + `*)*)?` + tail,
	}
}()

// knownFormat reports whether the validator asserts format name.
func knownFormat(name string) bool {
	_, ok := santhosh.Formats[name]
	return ok
}
