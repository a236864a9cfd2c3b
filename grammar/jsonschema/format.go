package jsonschema

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	santhosh "github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/reins-go/reins/grammar"
	"github.com/reins-go/reins/grammar/regex"
)

// Formats reins compiles, as regular expressions (Go syntax, matched in
// full). Each language lies within both the format's RFC and what the
// validator (santhosh-tekuri/jsonschema) accepts, so no output fails
// validation; where the two differ, or an exact bound would make the
// grammar huge, the expression keeps to the narrower side:
//
//   - time: a leap second (hh:mm:60, valid where the time is 23:59:60
//     in UTC) only at offsets of whole and half hours.
//   - hostname: a first label of at most 63 characters and at most 6
//     more of at most 29, or at most 8 labels of at most 29, so that the
//     whole stays under 253; no label begins or ends with a hyphen, or
//     has hyphens third and fourth (which keeps out IDNA's "xn--" labels
//     and the reserved "??--" ones, whose rules a grammar cannot check).
//   - email: a dot-atom local part (at most 64 characters: up to 4 atoms
//     of at most 16) or a quoted one (at most 30 characters inside) at a
//     hostname of at most 4 labels of at most 29, or at an IPv4 or IPv6
//     address literal.
//   - ipv6: the forms RFC 3986 lists (with "::" and an IPv4 tail), no
//     zone identifiers; IPv4 parts without leading zeros.
//   - uri, uri-reference: scheme, authority (user information, a
//     registered name without percent-encoding, which Go's url.Parse
//     refuses in a host, or an IPv6 address in brackets, and a port),
//     path, query and fragment of unreserved, sub-delimiter and
//     percent-encoded characters.
//
// Formats the validator does not know (custom ones such as "path") are
// annotations, as the specification says, and constrain nothing; formats
// it knows and reins does not (regex, json-pointer, ...) are refused.
// With Options.FormatAnnotation every format is an annotation.
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
		label63 = alnum + `(?:` + alnum + `|` + anyc + alnum + `|` + anyc + anyc + alnum + `|` + anyc + `(?:` + alnum + anyc + `|-` + alnum + `)` + anyc + `{0,58}` + alnum + `)?`
		host    = `(?:` + label63 + `(?:\.` + label + `){0,6}|` + label + `(?:\.` + label + `){1,7})`
		atext   = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
		octet   = `(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])`
		ipv4    = octet + `(?:\.` + octet + `){3}`
		pchar   = `(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})`
		pnc     = `(?:[A-Za-z0-9._~!$&'()*+,;=@-]|%[0-9A-Fa-f]{2})` // pchar but ':'
		user    = `(?:[A-Za-z0-9._~!$&'()*+,;=:-]|%[0-9A-Fa-f]{2})*@`
		regName = `[A-Za-z0-9._~!$&'()*+,;=-]*` // no percent-encoding: Go's url.Parse refuses it in a host
		tail    = `(?:\?(?:` + pchar + `|[/?])*)?(?:#(?:` + pchar + `|[/?])*)?`
		scheme  = `[A-Za-z][A-Za-z0-9+.-]*:`
		absPath = `(?:/` + pchar + `*)*`
		rootles = pchar + `+(?:/` + pchar + `*)*`
		dur     = `[0-9]+`
		qtext   = `(?:[\x20\x21\x23-\x5B\x5D-\x7E]|\\[\x20-\x7E])`
	)
	dt := `(?:` + dur + `Y(?:` + dur + `M(?:` + dur + `D)?)?|` + dur + `M(?:` + dur + `D)?|` + dur + `D)`
	auth := `//(?:` + user + `)?(?:` + regName + `|\[` + ipv6Of(ipv4) + `\])(?::[0-9]*)?`
	tm := `T(?:` + dur + `H(?:` + dur + `M(?:` + dur + `S)?)?|` + dur + `M(?:` + dur + `S)?|` + dur + `S)`
	return map[string]string{
		"date-time":     date + `[Tt]` + `(?:` + time + `|` + leapTime() + `)`,
		"date":          date,
		"time":          `(?:` + time + `|` + leapTime() + `)`,
		"duration":      `P(?:` + dur + `W|` + dt + `(?:` + tm + `)?|` + tm + `)`,
		"hostname":      host,
		"email":         `(?:` + atext + `{1,16}(?:\.` + atext + `{1,15}){0,3}|"` + qtext + `{1,30}")@(?:` + label + `(?:\.` + label + `){0,3}|\[` + ipv4 + `\]|\[IPv6:` + ipv6Of(ipv4) + `\])`,
		"ipv4":          ipv4,
		"ipv6":          ipv6Of(ipv4),
		"uuid":          `[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}`,
		"uri":           scheme + `(?:` + auth + absPath + `|` + rootles + `)?` + tail,
		"uri-reference": `(?:` + scheme + `(?:` + auth + absPath + `|` + rootles + `)?|` + auth + absPath + `|/(?:` + rootles + `)?|` + pnc + `+(?:/` + pchar + `*)*)?` + tail,
	}
}()

// formatGrammar is a format's expression lowered to a grammar (plain,
// for lengthsWithin) and JSON-encoded (encoded, a string's content).
type formatGrammar struct{ plain, encoded *grammar.Node }

// builtFormat is what compilations take from a format's expression,
// each built on first use and then shared, read only: its grammars
// (lowering date-time's took about a twentieth of MaskBench's compile
// time; a compilation puts a copy of encoded, nodeSlab.copyTree, into
// its grammar, which is the caller's to keep or change) and its
// automaton (regexDFA, matched in full, for a format intersected with a
// pattern or length bounds: uri's takes about 8 ms to build, more than
// most schemas' whole compile).
type builtFormat struct {
	grammar func() (formatGrammar, error)
	dfa     func() (*dfa, error)
}

// builtFormats holds every format's builtFormat.
var builtFormats = func() map[string]builtFormat {
	m := make(map[string]builtFormat, len(formats))
	for name, re := range formats {
		m[name] = builtFormat{
			grammar: sync.OnceValues(func() (formatGrammar, error) {
				plain, err := regex.Lower(re, false)
				if err != nil {
					return formatGrammar{}, err
				}
				encoded, err := jsonEncode(plain)
				return formatGrammar{plain, encoded}, err
			}),
			dfa: sync.OnceValues(func() (*dfa, error) { return regexDFA(re, false) }),
		}
	}
	return m
}()

// knownFormat reports whether the validator asserts format name.
func knownFormat(name string) bool {
	_, ok := santhosh.Formats[name]
	return ok
}

// ipv6Of is IPv6 as RFC 3986 writes it: eight groups, or "::" standing
// for one or more zero groups, the last two perhaps an IPv4 address.
func ipv6Of(ipv4 string) string {
	const h16 = `[0-9A-Fa-f]{1,4}`
	ls32 := `(?:` + h16 + `:` + h16 + `|` + ipv4 + `)`
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
	return `(?:` + strings.Join(ipv6, `|`) + `)`
}

// leapTime is the times of a leap second, 23:59:60 UTC, at the offsets
// of whole and half hours: hh:mm:60, a fraction, and the offset that
// makes hh:mm 23:59 in UTC.
func leapTime() string {
	alts := []string{`23:59:60(?:\.[0-9]+)?(?:[Zz]|[+-]00:00)`}
	for _, sign := range []int{1, -1} {
		for _, half := range []bool{false, true} {
			for off := range 24 {
				if off == 0 && !half {
					continue // ±00:00, above
				}
				// Local time = 23:59 UTC + sign × off:mm.
				local := 23*60 + 59 + sign*(off*60)
				if half {
					local += sign * 30
				}
				local = ((local % (24 * 60)) + 24*60) % (24 * 60)
				mm := "00"
				if half {
					mm = "30"
				}
				s := "+"
				if sign < 0 {
					s = "-"
				}
				alts = append(alts, fmt.Sprintf(`%02d:%02d:60(?:\.[0-9]+)?\%s%02d:%s`, local/60, local%60, s, off, mm))
			}
		}
	}
	return `(?:` + strings.Join(alts, `|`) + `)`
}
