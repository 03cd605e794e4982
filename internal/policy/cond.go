package policy

import (
	"bytes"
	"encoding/json"
	"math"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"
)

// opFamily is what a condition operator compares.
type opFamily uint8

const (
	famString opFamily = iota
	famNumeric
	famDate
	famBool
	famIP
	famARN
	famNull
)

// cmpKind is a numeric or date comparison.
type cmpKind uint8

const (
	cmpEq cmpKind = iota
	cmpLt
	cmpLe
	cmpGt
	cmpGe
)

// setKind is the ForAnyValue: / ForAllValues: qualifier.
type setKind uint8

const (
	setNone setKind = iota
	setAny
	setAll
)

// condition is one (operator, key, values) of a Condition block; a
// statement applies only when all its conditions hold.
type condition struct {
	op       string // as written, for IsPublic and messages
	fam      opFamily
	cmp      cmpKind
	neg      bool // a Not… operator
	ifExists bool
	set      setKind
	key      string // lower case

	globs []glob         // string values
	arns  [][6]glob      // ARN values, component by component
	nums  []float64      // numeric values
	times []int64        // date values, Unix nanoseconds
	nets  []netip.Prefix // IP values
	bools []string       // Bool values, lower case
	null  bool           // Null: true means "the key is absent"
}

type operator struct {
	fam  opFamily
	cmp  cmpKind
	neg  bool
	like bool // wildcards (StringLike, ArnLike; ArnEquals takes them too)
	fold bool
}

var operators = map[string]operator{
	"StringEquals":              {fam: famString},
	"StringNotEquals":           {fam: famString, neg: true},
	"StringEqualsIgnoreCase":    {fam: famString, fold: true},
	"StringNotEqualsIgnoreCase": {fam: famString, fold: true, neg: true},
	"StringLike":                {fam: famString, like: true},
	"StringNotLike":             {fam: famString, like: true, neg: true},
	"NumericEquals":             {fam: famNumeric, cmp: cmpEq},
	"NumericNotEquals":          {fam: famNumeric, cmp: cmpEq, neg: true},
	"NumericLessThan":           {fam: famNumeric, cmp: cmpLt},
	"NumericLessThanEquals":     {fam: famNumeric, cmp: cmpLe},
	"NumericGreaterThan":        {fam: famNumeric, cmp: cmpGt},
	"NumericGreaterThanEquals":  {fam: famNumeric, cmp: cmpGe},
	"DateEquals":                {fam: famDate, cmp: cmpEq},
	"DateNotEquals":             {fam: famDate, cmp: cmpEq, neg: true},
	"DateLessThan":              {fam: famDate, cmp: cmpLt},
	"DateLessThanEquals":        {fam: famDate, cmp: cmpLe},
	"DateGreaterThan":           {fam: famDate, cmp: cmpGt},
	"DateGreaterThanEquals":     {fam: famDate, cmp: cmpGe},
	"Bool":                      {fam: famBool},
	"IpAddress":                 {fam: famIP},
	"NotIpAddress":              {fam: famIP, neg: true},
	"ArnEquals":                 {fam: famARN, like: true},
	"ArnLike":                   {fam: famARN, like: true},
	"ArnNotEquals":              {fam: famARN, like: true, neg: true},
	"ArnNotLike":                {fam: famARN, like: true, neg: true},
	"Null":                      {fam: famNull},
}

// conditions compiles a Condition block.
func conditions(raw json.RawMessage, version string) ([]condition, error) {
	block, err := object(raw)
	if err != nil {
		return nil, malformed("Condition must be an object")
	}
	var out []condition
	for _, name := range sortedKeys(block) {
		full := name
		c := condition{op: full}
		if rest, ok := strings.CutPrefix(name, "ForAnyValue:"); ok {
			c.set, name = setAny, rest
		} else if rest, ok := strings.CutPrefix(name, "ForAllValues:"); ok {
			c.set, name = setAll, rest
		}
		if rest, ok := strings.CutSuffix(name, "IfExists"); ok && rest != "Null" {
			c.ifExists, name = true, rest
		}
		op, ok := operators[name]
		if !ok {
			return nil, malformed("Invalid Condition type : %s", full)
		}
		c.fam, c.cmp, c.neg = op.fam, op.cmp, op.neg
		keys, err := object(block[full])
		if err != nil {
			return nil, malformed("Condition %s must map condition keys to values", full)
		}
		for _, key := range sortedKeys(keys) {
			k := strings.ToLower(key)
			if !validConditionKey(k) {
				return nil, malformed("Policy has an invalid condition key")
			}
			vals, ok := conditionValues(keys[key])
			if !ok {
				return nil, malformed("Invalid Condition value for %s %s", full, key)
			}
			if k == "aws:sourceip" {
				// S3 checks the addresses whatever the operator (Null too).
				for _, v := range vals {
					if _, ok := parsePrefix(v); !ok {
						return nil, malformed("Invalid IP address in Conditions")
					}
				}
			}
			cc := c
			cc.key = k
			if err := cc.compile(vals, op, version); err != nil {
				return nil, err
			}
			out = append(out, cc)
		}
	}
	return out, nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// conditionValues reads a value or a list of values: strings, numbers and
// booleans, as text.
func conditionValues(raw json.RawMessage) ([]string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
			return nil, false
		}
		out := make([]string, 0, len(list))
		for _, r := range list {
			v, ok := scalar(r)
			if !ok {
				return nil, false
			}
			out = append(out, v)
		}
		return out, true
	}
	v, ok := scalar(raw)
	return []string{v}, ok
}

func scalar(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	switch raw[0] {
	case '"':
		var s string
		return s, json.Unmarshal(raw, &s) == nil
	case 't', 'f':
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			return "", false
		}
		return strconv.FormatBool(b), true
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return "", false
	}
	return n.String(), true
}

func (c *condition) compile(vals []string, op operator, version string) error {
	bad := func(v string) error {
		return malformed("Invalid Condition value for %s %s: %q", c.op, c.key, v)
	}
	for _, v := range vals {
		switch c.fam {
		case famString:
			g, err := compileGlob(v, globOptions{wild: op.like, vars: version == Version2012, fold: op.fold})
			if err != nil {
				return err
			}
			c.globs = append(c.globs, g)
		case famARN:
			var a [6]glob
			parts := strings.SplitN(v, ":", 6)
			if len(parts) != 6 {
				if v != "*" {
					return bad(v)
				}
				parts = []string{"*", "*", "*", "*", "*", "*"}
			}
			for i, part := range parts {
				g, err := compileGlob(part, globOptions{wild: true, vars: version == Version2012})
				if err != nil {
					return err
				}
				a[i] = g
			}
			c.arns = append(c.arns, a)
		case famNumeric:
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(f) {
				return bad(v)
			}
			c.nums = append(c.nums, f)
		case famDate:
			t, ok := parseDate(v)
			if !ok {
				return bad(v)
			}
			c.times = append(c.times, t)
		case famBool:
			l := strings.ToLower(v)
			if l != "true" && l != "false" {
				return bad(v)
			}
			c.bools = append(c.bools, l)
		case famIP:
			p, ok := parsePrefix(v)
			if !ok {
				return malformed("Invalid IP address in Conditions")
			}
			c.nets = append(c.nets, p)
		case famNull:
			l := strings.ToLower(v)
			if (l != "true" && l != "false") || len(vals) != 1 {
				return bad(v)
			}
			c.null = l == "true"
		}
	}
	return nil
}

// maxEpoch is the largest epoch second whose nanoseconds fit an int64.
const maxEpoch = math.MaxInt64 / int64(time.Second)

// parseDate reads ISO 8601 (a date, or a date and time with a zone) or
// Unix epoch seconds, as AWS's date operators do.
func parseDate(v string) (int64, bool) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n > maxEpoch || n < -maxEpoch {
			return 0, false
		}
		return n * 1e9, true
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05Z0700", "2006-01-02T15:04Z07:00", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			if y := t.Year(); y < 1678 || y > 2261 { // UnixNano's range
				return 0, false
			}
			return t.UnixNano(), true
		}
	}
	return 0, false
}

// parsePrefix reads a CIDR block or a single address.
func parsePrefix(v string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(v); err == nil {
		return netip.PrefixFrom(p.Addr().Unmap(), bitsUnmapped(p)).Masked(), true
	}
	if a, err := netip.ParseAddr(v); err == nil {
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}

func bitsUnmapped(p netip.Prefix) int {
	if p.Addr().Is4In6() {
		if b := p.Bits() - 96; b >= 0 {
			return b
		}
		return 0
	}
	return p.Bits()
}

// holds reports whether the condition holds for the request's context.
func (c *condition) holds(ctx map[string][]string) bool {
	vals := ctx[c.key]
	present := len(vals) > 0
	if c.fam == famNull {
		return !present == c.null
	}
	switch c.set {
	case setAny:
		if !present {
			return c.ifExists
		}
		for _, v := range vals {
			if c.matchOne(v, ctx) != c.neg {
				return true
			}
		}
		return false
	case setAll:
		// Over an empty set every value matches: true.
		for _, v := range vals {
			if c.matchOne(v, ctx) == c.neg {
				return false
			}
		}
		return true
	}
	if !present {
		// A missing key matches no value: a negated operator holds.
		return c.ifExists || c.neg
	}
	for _, v := range vals {
		if c.matchOne(v, ctx) {
			return !c.neg
		}
	}
	return c.neg
}

// matchOne reports whether the request value v matches one of the
// condition's values under the operator without its negation.
func (c *condition) matchOne(v string, ctx map[string][]string) bool {
	switch c.fam {
	case famString:
		for i := range c.globs {
			if c.globs[i].match(v, ctx) {
				return true
			}
		}
	case famARN:
		for i := range c.arns {
			if matchARN(&c.arns[i], v, ctx) {
				return true
			}
		}
	case famNumeric:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return false
		}
		for _, n := range c.nums {
			if compare(c.cmp, cmpFloat(f, n)) {
				return true
			}
		}
	case famDate:
		t, ok := requestDate(v)
		if !ok {
			return false
		}
		for _, n := range c.times {
			if compare(c.cmp, cmpInt(t, n)) {
				return true
			}
		}
	case famBool:
		for _, b := range c.bools {
			if equalFold(v, b) {
				return true
			}
		}
	case famIP:
		a, err := netip.ParseAddr(v)
		if err != nil {
			return false
		}
		a = a.Unmap()
		for _, p := range c.nets {
			if p.Contains(a) {
				return true
			}
		}
	}
	return false
}

// requestDate reads a request's date value: RFC 3339 (aws:CurrentTime)
// or epoch seconds (aws:EpochTime).
func requestDate(v string) (int64, bool) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n > maxEpoch || n < -maxEpoch {
			return 0, false
		}
		return n * 1e9, true
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UnixNano(), true
	}
	return parseDate(v)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compare applies k to the sign of (request value - policy value).
func compare(k cmpKind, sign int) bool {
	switch k {
	case cmpLt:
		return sign < 0
	case cmpLe:
		return sign <= 0
	case cmpGt:
		return sign > 0
	case cmpGe:
		return sign >= 0
	}
	return sign == 0
}

// matchARN matches v component by component: a wildcard never crosses one
// of the first five colons.
func matchARN(a *[6]glob, v string, ctx map[string][]string) bool {
	for i := 0; i < 5; i++ {
		j := strings.IndexByte(v, ':')
		if j < 0 {
			return false
		}
		if !a[i].match(v[:j], ctx) {
			return false
		}
		v = v[j+1:]
	}
	return a[5].match(v, ctx)
}
