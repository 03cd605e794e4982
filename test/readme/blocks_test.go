package readme

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	md := "# Title\n\n" +
		"<!-- readme-test: background wait=127.0.0.1:8080,127.0.0.1:9000 -->\n```sh\ngo run ./cmd/coffer serve\n```\n\n" +
		"text\n\n```\nnot shell\n```\n\n" +
		"<!-- readme-test: skip (the test command) -->\n```sh\n./scripts/test.sh\n```\n\n" +
		"```sh\nA=1\necho $A\n```\n\n" +
		"<!-- readme-test: repeat=3 (again and again) -->\n```bash\nrun it\n```\n\n" +
		"1. a list item:\n\n   ```sh\n   indented\n   ```\n"
	got, err := Parse("X.md", md)
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{
		{Doc: "X.md", Line: 4, Text: "go run ./cmd/coffer serve\n", Background: true, Wait: []string{"127.0.0.1:8080", "127.0.0.1:9000"}, Repeat: 1},
		{Doc: "X.md", Line: 15, Text: "./scripts/test.sh\n", Skip: "the test command", Repeat: 1},
		{Doc: "X.md", Line: 19, Text: "A=1\necho $A\n", Repeat: 1},
		{Doc: "X.md", Line: 25, Text: "run it\n", Repeat: 3},
		{Doc: "X.md", Line: 31, Text: "   indented\n", Repeat: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d blocks %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Where() != w.Where() || g.Text != w.Text || g.Skip != w.Skip || g.Background != w.Background ||
			strings.Join(g.Wait, ",") != strings.Join(w.Wait, ",") || g.Repeat != w.Repeat {
			t.Errorf("block %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

// TestParseRefuses: a directive that would leave a block out silently, or
// that the test cannot honour, is an error, not a guess.
func TestParseRefuses(t *testing.T) {
	for _, md := range []string{
		"<!-- readme-test: skip -->\n```sh\nx\n```\n",                      // no reason
		"<!-- readme-test: skip () -->\n```sh\nx\n```\n",                   // empty reason
		"<!-- readme-test: ignore (why) -->\n```sh\nx\n```\n",              // unknown
		"<!-- readme-test: background -->\n```sh\nx\n```\n",                // nothing to wait for
		"<!-- readme-test: background wait=localhost -->\n```sh\nx\n```\n", // not host:port
		"<!-- readme-test: repeat=0 -->\n```sh\nx\n```\n",
		"<!-- readme-test: repeat=2 because -->\n```sh\nx\n```\n",
		"<!-- readme-test: skip (why) -->\n\nsome text\n\n```sh\nx\n```\n", // not right before the block
		"<!-- readme-test: skip (why) -->\n```json\n{}\n```\n",             // not an sh block
		"<!-- readme-test: skip (why) -->\n",                               // no block at all
		"<!-- readme-test: skip (a) -->\n<!-- readme-test: skip (b) -->\n```sh\nx\n```\n",
		"<!-- readme-test:\nskip (why) -->\n```sh\nx\n```\n", // over two lines
		"```sh\nnever closed\n",
	} {
		if bs, err := Parse("X.md", md); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", md, bs)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("<!-- readme-test: skip (x) -->\n```sh\na\n```\n")
	f.Add("<!-- readme-test: background wait=127.0.0.1:1 -->\n~~~sh\nb\n~~~\n```sh\nc\n```\n")
	f.Add("<!-- readme-test: repeat=2 (y) -->\n````bash\n```\n````\n")
	f.Fuzz(func(t *testing.T, md string) {
		bs, err := Parse("F.md", md)
		if err != nil {
			return
		}
		lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
		last := 0
		for _, b := range bs {
			if b.Line <= last || b.Line > len(lines) {
				t.Fatalf("block at line %d after %d, of %d lines", b.Line, last, len(lines))
			}
			last = b.Line
			if b.Repeat < 1 || (b.Background && len(b.Wait) == 0) || (b.Skip != "" && b.Background) {
				t.Fatalf("inconsistent block %+v", b)
			}
			if !strings.HasSuffix(b.Text, "\n") {
				t.Fatalf("block text %q does not end its last line", b.Text)
			}
		}
	})
}
