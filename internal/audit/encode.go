package audit

import (
	"time"
	"unicode/utf8"
)

// appendJSON appends e as one JSON object, byte for byte what
// encoding/json's Marshal writes for it (TestAppendJSONMatchesMarshal),
// without its reflection: the writer encodes every event.
func appendJSON(b []byte, e *Event) []byte {
	b = append(b, `{"time":"`...)
	b = e.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","action":`...)
	b = appendString(b, string(e.Action))
	b = append(b, `,"actor":{"type":`...)
	b = appendString(b, string(e.Actor.Type))
	b = appendField(b, "id", e.Actor.ID)
	b = appendField(b, "user", e.Actor.User)
	b = appendField(b, "name", e.Actor.Name)
	b = append(b, '}')
	b = appendField(b, "client", e.Client)
	b = appendField(b, "request_id", e.RequestID)
	b = append(b, `,"target":{`...)
	n := len(b)
	t := &e.Target
	for _, f := range [...]struct{ k, v string }{
		{"bucket", t.Bucket}, {"key", t.Key}, {"version_id", t.VersionID}, {"share", t.Share}, {"user", t.User},
		{"email", t.Email}, {"access_key", t.AccessKey}, {"kms_key", t.KMSKey}, {"invite", t.Invite}, {"job", t.Job},
	} {
		if f.v == "" {
			continue
		}
		if len(b) > n {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, f.k...)
		b = append(b, `":`...)
		b = appendString(b, f.v)
	}
	b = append(b, `},"outcome":`...)
	b = appendString(b, string(e.Outcome))
	b = appendField(b, "reason", string(e.Reason))
	return append(b, '}')
}

// appendField appends ,"k":"v" unless v is empty (omitempty).
func appendField(b []byte, k, v string) []byte {
	if v == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, k...)
	b = append(b, `":`...)
	return appendString(b, v)
}

const hex = "0123456789abcdef"

// appendString appends s as a JSON string as encoding/json does (HTML
// characters escaped, invalid UTF-8 as U+FFFD, U+2028 and U+2029
// escaped).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
