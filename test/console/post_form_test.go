package console_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/s3api/sigv4"
	"github.com/coffer-storage/coffer/test/testenv"
)

// formPage is the page a web app would serve: a plain HTML form posting
// a file to the S3 listener with a signed POST policy (no script).
var formPage = template.Must(template.New("form").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>upload</title></head><body>
<form id="upload" action="{{.Action}}" method="post" enctype="multipart/form-data">
{{range .Fields}}<input type="hidden" name="{{.Name}}" value="{{.Value}}">
{{end}}<input id="file" type="file" name="file">
<button id="send" type="submit">Upload</button>
</form></body></html>`))

type formField struct{ Name, Value string }

// TestPostFormInChromium: a plain HTML form, served from its own loopback
// origin, uploads a file to a bucket with a SigV4 POST policy the test
// signs, in a real Chromium (post_form.py drives it): the browser lands on
// success_action_redirect with the object's bucket, key and ETag, and the
// object is stored; a file larger than the policy's content-length-range
// is refused (the browser shows S3's EntityTooLarge XML) and nothing is
// stored. A form POST is a navigation: no CORS configuration is involved.
func TestPostFormInChromium(t *testing.T) {
	chromium, python := os.Getenv("COFFER_CHROMIUM"), os.Getenv("COFFER_PLAYWRIGHT_PYTHON")
	if chromium == "" || python == "" {
		if os.Getenv("COFFER_REQUIRE_CLIENTS") == "1" {
			t.Fatal("COFFER_CHROMIUM and COFFER_PLAYWRIGHT_PYTHON are required (scripts/test.sh sets them)")
		}
		t.Skip("set COFFER_CHROMIUM and COFFER_PLAYWRIGHT_PYTHON to run the browser test")
	}
	s := testenv.Start(t)
	k := testenv.NewS3Key(t, s.NewUser(t))
	const bucket = "post-form"
	testenv.MustS3(t, k, s.S3URL, "PUT", "/"+bucket, nil, 200)

	mux := http.NewServeMux()
	page := httptest.NewServer(mux)
	defer page.Close()
	now := time.Now().UTC()
	form := func(maxSize int) []formField {
		date := now.Format("20060102")
		cred := k.ID + "/" + date + "/us-east-1/s3/aws4_request"
		redirect := page.URL + "/done"
		doc, err := json.Marshal(map[string]any{
			"expiration": now.Add(10 * time.Minute).Format(time.RFC3339),
			"conditions": []any{
				map[string]string{"bucket": bucket},
				[]any{"starts-with", "$key", "form/"},
				[]any{"content-length-range", 1, maxSize},
				map[string]string{"success_action_redirect": redirect},
				map[string]string{"x-amz-algorithm": "AWS4-HMAC-SHA256"},
				map[string]string{"x-amz-credential": cred},
				map[string]string{"x-amz-date": now.Format("20060102T150405Z")},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		policy := base64.StdEncoding.EncodeToString(doc)
		return []formField{
			{"key", "form/${filename}"}, {"success_action_redirect", redirect},
			{"x-amz-algorithm", "AWS4-HMAC-SHA256"}, {"x-amz-credential", cred},
			{"x-amz-date", now.Format("20060102T150405Z")}, {"policy", policy},
			{"x-amz-signature", sigv4.SignPost(k.Secret, date, "us-east-1", policy)},
		}
	}
	serve := func(path string, fields []formField) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			formPage.Execute(w, map[string]any{"Action": s.S3URL + "/" + bucket, "Fields": fields})
		})
	}
	serve("/upload", form(1<<20))
	serve("/small", form(1024))
	mux.HandleFunc("/done", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<!doctype html><title>done</title><p id=done>uploaded %s</p>", template.HTMLEscapeString(r.URL.Query().Get("key")))
	})

	work := t.TempDir()
	cmd := exec.Command(python, "post_form.py")
	cmd.Env = append(os.Environ(), "FORM_URL="+page.URL, "S3_URL="+s.S3URL, "FORM_CHROMIUM="+chromium, "FORM_WORK="+work)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("post_form.py (%s):\n%s", time.Since(start).Round(time.Second), out)
	if err != nil {
		t.Fatalf("browser form upload failed: %v\nserver log:\n%s", err, s.Stderr())
	}

	// What the browser sent is stored; the refused file is not.
	want, err := os.ReadFile(work + "/photo.txt")
	if err != nil {
		t.Fatal(err)
	}
	got := testenv.MustS3(t, k, s.S3URL, "GET", "/"+bucket+"/form/photo.txt", nil, 200)
	if string(got.Body) != string(want) {
		t.Errorf("stored %d bytes, the browser sent %d", len(got.Body), len(want))
	}
	testenv.MustS3(t, k, s.S3URL, "HEAD", "/"+bucket+"/form/big.bin", nil, 404)
}
