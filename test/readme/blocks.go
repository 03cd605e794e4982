// Package readme runs the documentation's shell examples as a newcomer
// would: the fenced sh blocks of README.md (and of the docs listed in
// Documents), in order, in one shell, in a fresh clone of the checkout
// (see readme_test.go). This file reads the blocks and their directives.
//
// # Directives
//
// An HTML comment on the line before a fence says how its block runs:
//
//	<!-- readme-test: skip (REASON) -->            not run; the reason is required
//	<!-- readme-test: background wait=HOST:PORT,… -->  runs in the background, in its own
//	                                                 shell; the next block starts once
//	                                                 every address accepts connections
//	<!-- readme-test: repeat=N (REASON) -->          runs N times in a row
//
// Every other sh block runs as written. A directive that does not stand
// right before an sh fence, or that is not one of these, is an error: no
// block is left out by guesswork.
package readme

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Block is one fenced sh block of a document.
type Block struct {
	Doc  string // the document's path, e.g. README.md
	Line int    // the line of its opening fence, from 1
	Text string // the commands, without the fences

	Skip       string   // why the block is not run ("" = it runs)
	Background bool     // runs in the background
	Wait       []string // background: host:port addresses to wait for
	Repeat     int      // runs this many times (at least 1)

	Prelude string // commands run before it (see Document.Prelude)
}

// Where names the block for messages: README.md:20.
func (b Block) Where() string { return fmt.Sprintf("%s:%d", b.Doc, b.Line) }

var (
	fenceRE     = regexp.MustCompile("^(```+|~~~+)\\s*([A-Za-z0-9_+-]*)")
	directiveRE = regexp.MustCompile(`^<!--\s*readme-test:\s*(.*?)\s*-->$`)
	reasonRE    = regexp.MustCompile(`^\(([^()]+)\)$`)
	waitRE      = regexp.MustCompile(`^[A-Za-z0-9.\-]+:[0-9]+$`)
)

// shellLangs are the fence languages of shell blocks.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// Parse returns the sh blocks of the markdown document doc, with their
// directives. It fails on an unknown or misplaced directive and on a
// fence that is not closed.
func Parse(doc, md string) ([]Block, error) {
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	var out []Block
	var pending *Block // a directive waiting for its fence
	pendingLine := 0
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if m := directiveRE.FindStringSubmatch(line); m != nil {
			if pending != nil {
				return nil, fmt.Errorf("%s:%d: a readme-test directive without an sh block after it", doc, pendingLine)
			}
			b, err := parseDirective(m[1])
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %v", doc, i+1, err)
			}
			pending, pendingLine = &b, i+1
			continue
		}
		if strings.Contains(line, "readme-test") && strings.HasPrefix(line, "<!--") {
			return nil, fmt.Errorf("%s:%d: a readme-test directive must be one line: <!-- readme-test: … -->", doc, i+1)
		}
		m := fenceRE.FindStringSubmatch(line)
		if m == nil {
			if pending != nil && line != "" {
				return nil, fmt.Errorf("%s:%d: a readme-test directive without an sh block after it", doc, pendingLine)
			}
			continue
		}
		// A fence: read to its closing fence (same character, at least as long).
		open, lang := m[1], m[2]
		start := i
		var body []string
		closed := false
		for i++; i < len(lines); i++ {
			l := strings.TrimSpace(lines[i])
			if strings.HasPrefix(l, open[:1]) && strings.Trim(l, open[:1]) == "" && len(l) >= len(open) {
				closed = true
				break
			}
			body = append(body, lines[i])
		}
		if !closed {
			return nil, fmt.Errorf("%s:%d: the fence is never closed", doc, start+1)
		}
		if !shellLangs[lang] {
			if pending != nil {
				return nil, fmt.Errorf("%s:%d: a readme-test directive before a %q block (only sh blocks run)", doc, pendingLine, lang)
			}
			continue
		}
		b := Block{Repeat: 1}
		if pending != nil {
			b = *pending
		}
		b.Doc, b.Line, b.Text = doc, start+1, strings.Join(body, "\n")+"\n"
		out = append(out, b)
		pending = nil
	}
	if pending != nil {
		return nil, fmt.Errorf("%s:%d: a readme-test directive without an sh block after it", doc, pendingLine)
	}
	return out, nil
}

// parseDirective reads the text of a directive: skip (REASON),
// background wait=A,B or repeat=N (REASON).
func parseDirective(s string) (Block, error) {
	b := Block{Repeat: 1}
	word, rest, _ := strings.Cut(s, " ")
	rest = strings.TrimSpace(rest)
	switch {
	case word == "skip":
		m := reasonRE.FindStringSubmatch(rest)
		if m == nil || strings.TrimSpace(m[1]) == "" {
			return b, fmt.Errorf("skip needs a reason: skip (why)")
		}
		b.Skip = strings.TrimSpace(m[1])
	case word == "background":
		addrs, ok := strings.CutPrefix(rest, "wait=")
		if !ok || addrs == "" {
			return b, fmt.Errorf("background needs the addresses to wait for: background wait=127.0.0.1:8080")
		}
		for a := range strings.SplitSeq(addrs, ",") {
			if !waitRE.MatchString(a) {
				return b, fmt.Errorf("background wait: %q is not host:port", a)
			}
			b.Wait = append(b.Wait, a)
		}
		b.Background = true
	case strings.HasPrefix(word, "repeat="):
		n, err := strconv.Atoi(strings.TrimPrefix(word, "repeat="))
		if err != nil || n < 1 || n > 10 {
			return b, fmt.Errorf("repeat=N needs N from 1 to 10")
		}
		if rest != "" && !reasonRE.MatchString(rest) {
			return b, fmt.Errorf("repeat=N: unexpected %q (a reason goes in parentheses)", rest)
		}
		b.Repeat = n
	default:
		return b, fmt.Errorf("unknown readme-test directive %q: want skip (REASON), background wait=HOST:PORT,… or repeat=N", s)
	}
	return b, nil
}
