package policy

import (
	"strings"
	"unicode/utf8"
)

// A glob is a compiled policy string: literal text, the wildcards * (any
// run of characters) and ? (one character), and policy variables such as
// ${aws:username} that take their value from the request. Compiled once
// at Parse; matching allocates nothing.
type glob struct {
	// segs are the parts between the stars; with no star there is one
	// segment and it must match the whole string.
	segs [][]item
	fold bool // compare ASCII letters case-insensitively (literals are lower case)
}

type itemKind uint8

const (
	itemLit itemKind = iota // literal text
	itemOne                 // ?: one character
	itemVar                 // ${key}: the request's value of key
)

type item struct {
	kind itemKind
	text string // the literal, or the variable's key (lower case)
	def  string // the variable's default, if hasDef
	// hasDef: ${key, 'default'} gives a value when the request has none.
	hasDef bool
}

// globOptions say how a policy string is read.
type globOptions struct {
	wild bool // * and ? are wildcards (otherwise literal characters)
	vars bool // ${...} are policy variables (Version 2012-10-17)
	fold bool // case-insensitive
}

// compileGlob compiles s. It fails only on a malformed ${...} variable.
func compileGlob(s string, o globOptions) (glob, error) {
	g := glob{fold: o.fold}
	var seg []item
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t := lit.String()
			if o.fold {
				t = asciiLower(t)
			}
			seg = append(seg, item{kind: itemLit, text: t})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case o.wild && c == '*':
			flush()
			g.segs = append(g.segs, seg)
			seg = nil
		case o.wild && c == '?':
			flush()
			seg = append(seg, item{kind: itemOne})
		case o.vars && c == '$' && i+1 < len(s) && s[i+1] == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return glob{}, malformed("Policy has an invalid policy variable: %q", s)
			}
			v := strings.TrimSpace(s[i+2 : i+end])
			i += end
			switch v {
			case "*", "?", "$":
				lit.WriteString(v)
				continue
			}
			it := item{kind: itemVar}
			if k, d, ok := strings.Cut(v, ","); ok {
				d = strings.TrimSpace(d)
				if len(d) < 2 || d[0] != '\'' || d[len(d)-1] != '\'' {
					return glob{}, malformed("Policy has an invalid policy variable: %q", s)
				}
				v, it.def, it.hasDef = strings.TrimSpace(k), d[1:len(d)-1], true
			}
			it.text = strings.ToLower(v)
			if !validConditionKey(it.text) {
				return glob{}, malformed("Policy has an invalid policy variable: %q", s)
			}
			flush()
			seg = append(seg, it)
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	g.segs = append(g.segs, seg)
	return g, nil
}

// literal reports the glob's text when it has no wildcard and no
// variable.
func (g *glob) literal() (string, bool) {
	if len(g.segs) != 1 {
		return "", false
	}
	switch s := g.segs[0]; {
	case len(s) == 0:
		return "", true
	case len(s) == 1 && s[0].kind == itemLit:
		return s[0].text, true
	}
	return "", false
}

// match reports whether s matches g; ctx supplies the variables' values.
func (g *glob) match(s string, ctx map[string][]string) bool {
	segs := g.segs
	if len(segs) == 1 {
		end, ok := g.matchSeg(segs[0], s, 0, ctx)
		return ok && end == len(s)
	}
	pos, ok := g.matchSeg(segs[0], s, 0, ctx)
	if !ok {
		return false
	}
	// Each middle segment at its leftmost place: a later place never
	// leaves more for the rest to match.
	for _, seg := range segs[1 : len(segs)-1] {
		found := false
		for i := pos; i <= len(s); i = next(s, i) {
			if len(seg) > 0 && seg[0].kind == itemLit && !g.fold {
				// jump to the next place the segment's text starts
				j := strings.Index(s[i:], seg[0].text)
				if j < 0 {
					return false
				}
				i += j
			}
			if end, ok := g.matchSeg(seg, s, i, ctx); ok {
				pos, found = end, true
				break
			}
		}
		if !found {
			return false
		}
	}
	last := segs[len(segs)-1]
	if len(last) == 0 {
		return true // a trailing star takes the rest
	}
	if len(last) == 1 && last[0].kind == itemLit {
		// the usual tail: fixed text at the end
		i := len(s) - len(last[0].text)
		return i >= pos && hasPrefixAt(s, i, last[0].text, g.fold)
	}
	for i := pos; i <= len(s); i = next(s, i) {
		if end, ok := g.matchSeg(last, s, i, ctx); ok && end == len(s) {
			return true
		}
	}
	return false
}

// next is the index of the character after the one at i (len(s)+1 at the
// end, to stop loops that run to len(s) inclusive).
func next(s string, i int) int {
	if i >= len(s) {
		return i + 1
	}
	_, n := utf8.DecodeRuneInString(s[i:])
	return i + n
}

// matchSeg matches seg at s[i:], anchored, and returns where it ended.
func (g *glob) matchSeg(seg []item, s string, i int, ctx map[string][]string) (int, bool) {
	for _, it := range seg {
		switch it.kind {
		case itemLit:
			if !hasPrefixAt(s, i, it.text, g.fold) {
				return 0, false
			}
			i += len(it.text)
		case itemOne:
			if i >= len(s) {
				return 0, false
			}
			i = next(s, i)
		case itemVar:
			v, ok := variable(ctx, it)
			if !ok || !hasPrefixAt(s, i, v, g.fold) {
				return 0, false
			}
			i += len(v)
		}
	}
	return i, true
}

// variable is the value of a policy variable: the request's first value of
// the key, or the variable's default.
func variable(ctx map[string][]string, it item) (string, bool) {
	if vs := ctx[it.text]; len(vs) > 0 {
		return vs[0], true
	}
	return it.def, it.hasDef
}

// hasPrefixAt reports whether s[i:] starts with p; with fold, ASCII letters
// of s compare in lower case (p is lower case already, except a
// variable's value, which is folded too).
func hasPrefixAt(s string, i int, p string, fold bool) bool {
	if len(s)-i < len(p) {
		return false
	}
	if !fold {
		return s[i:i+len(p)] == p
	}
	for j := 0; j < len(p); j++ {
		if lower(s[i+j]) != lower(p[j]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// asciiLower lower-cases ASCII letters only, as matching does.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = lower(c)
	}
	return string(b)
}

// equalFold compares ASCII case-insensitively without allocating.
func equalFold(a, b string) bool {
	return len(a) == len(b) && hasPrefixAt(a, 0, b, true)
}
