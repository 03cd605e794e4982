package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/auth"
	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
)

func TestRefinedProblemTypes(t *testing.T) {
	for _, tc := range []struct {
		err              error
		status           int
		wantType, wantCd string
	}{
		{auth.ErrSignupClosed(), 403, "signup_closed", "permission_denied"},
		{auth.ErrInviteRequired(), 403, "invite_required", "permission_denied"},
		{meta.ErrInviteInvalid(), 403, "invite_invalid", "permission_denied"},
		{errcode.New(errcode.PermissionDenied, "not yours"), 403, "permission_denied", "permission_denied"},
		// A reason that is not a refined type keeps the code's type.
		{&errcode.Error{Code: errcode.Unavailable, Detail: map[string]any{"reason": "staging_lease_lost"}}, 503, "unavailable", "unavailable"},
		{&errcode.Error{Code: errcode.InvalidArgument, Detail: map[string]any{"reason": "invite_invalid"}}, 400, "invalid_argument", "invalid_argument"},
	} {
		w := httptest.NewRecorder()
		WriteProblem(w, httptest.NewRequest("POST", "/api/v1/auth/signup", nil), nil, tc.err)
		var p Problem
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		if got, want := w.Code, tc.status; got != want {
			t.Errorf("%v: status %d, want %d", tc.err, got, want)
		}
		if got, want := p.Type, ErrorTypeBase+tc.wantType; got != want {
			t.Errorf("%v: type %q, want %q", tc.err, got, want)
		}
		if got, want := p.Code, tc.wantCd; got != want {
			t.Errorf("%v: code %q, want %q", tc.err, got, want)
		}
	}
}

// TestQuotaProblemKeepsDetail: a full quota (507) is a refusal the client
// must understand, not an internal failure: its detail and extra are
// shown, and it is not logged as an error (errors.md's example).
func TestQuotaProblemKeepsDetail(t *testing.T) {
	w := httptest.NewRecorder()
	err := errcode.New(errcode.QuotaExceeded, "storage quota exceeded")
	WriteProblem(w, httptest.NewRequest("PUT", "/api/v1/buckets/b/files/k", nil), slog.New(slog.DiscardHandler), err)
	var p Problem
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if got, want := w.Code, 507; got != want {
		t.Errorf("status: got %d, want %d", got, want)
	}
	if got, want := p.Detail, "storage quota exceeded"; got != want {
		t.Errorf("detail: got %q, want %q", got, want)
	}
}

// TestServerErrorDetail: a 501 keeps the detail that says what the
// server does not do (written for the client); a 500 shows a generic
// detail, whatever the error said.
func TestServerErrorDetail(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		detail string
	}{
		{errcode.New(errcode.NotImplemented, "tus uploads are not enabled on this server"), 501, "tus uploads are not enabled on this server"},
		{errcode.New(errcode.Internal, "disk /var/lib/x on fire"), 500, "internal error; quote the request ID when reporting it"},
	} {
		w := httptest.NewRecorder()
		WriteProblem(w, httptest.NewRequest("PATCH", "/api/v1/tus/x", nil), slog.New(slog.DiscardHandler), tc.err)
		var p Problem
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		if w.Code != tc.status || p.Detail != tc.detail {
			t.Errorf("%v: %d %q, want %d %q", tc.err, w.Code, p.Detail, tc.status, tc.detail)
		}
	}
}

// TestRefinedTypesDocumented: every problem type has its anchor in
// docs/errors.md.
func TestRefinedTypesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	for code, reasons := range refinedTypes {
		for _, r := range append([]string{code.String()}, reasons...) {
			if !strings.Contains(string(doc), `<a id="`+r+`"></a>`) {
				t.Errorf("docs/errors.md has no anchor for problem type %q", r)
			}
		}
	}
}
