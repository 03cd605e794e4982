package s3api

import (
	"bytes"
	"encoding/xml"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coffer-storage/coffer/internal/errcode"
	"github.com/coffer-storage/coffer/internal/meta"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

func TestEveryCodeTranslates(t *testing.T) {
	for c, s3 := range s3err.Codes() {
		row, ok := s3err.Table[s3]
		if !ok || row.Status == 0 {
			t.Errorf("errcode %v translates to %q, which is not in the table", c, s3)
		}
	}
}

func TestTranslateRefinements(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&errcode.Error{Code: errcode.NotFound, Detail: map[string]any{"resource": "bucket"}}, "NoSuchBucket"},
		{&errcode.Error{Code: errcode.NotFound, Detail: map[string]any{"resource": "upload"}}, "NoSuchUpload"},
		{&errcode.Error{Code: errcode.NotFound}, "NoSuchKey"},
		{&errcode.Error{Code: errcode.ChecksumMismatch, Detail: map[string]any{"algorithm": "sha256"}}, "XAmzContentSHA256Mismatch"},
		{&errcode.Error{Code: errcode.ChecksumMismatch, Detail: map[string]any{"algorithm": "md5"}}, "BadDigest"},
		{&errcode.Error{Code: errcode.InvalidArgument, Detail: map[string]any{"reason": "key_too_long"}}, "KeyTooLongError"},
		{&errcode.Error{Code: errcode.InvalidArgument, Detail: map[string]any{"reason": "entity_too_small"}}, "EntityTooSmall"},
		{&errcode.Error{Code: errcode.Conflict, Detail: map[string]any{"reason": "bucket_not_empty"}}, "BucketNotEmpty"},
		{&errcode.Error{Code: errcode.AlreadyExists, Detail: map[string]any{"s3_code": "BucketAlreadyOwnedByYou"}}, "BucketAlreadyOwnedByYou"},
		{s3err.New(s3err.MalformedXML, ""), "MalformedXML"},
		{errcode.New(errcode.Unknown, "boom"), "InternalError"},
		{errcode.New(errcode.StorageFull, "disk full"), "XMinioStorageFull"},
	}
	for _, tc := range tests {
		if got := s3err.Translate(tc.err).Code; got != tc.want {
			t.Errorf("Translate(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}

func TestInternalErrorsHideDetails(t *testing.T) {
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/b/k", nil)
	s3err.Write(w, r, errcode.New(errcode.Unknown, "secret path /var/lib/x"), "b", "k", "RID", "")
	if strings.Contains(w.Body.String(), "/var/lib") || w.Code != 500 {
		t.Errorf("internal details leaked or wrong status: %d %s", w.Code, w.Body)
	}
	if !strings.Contains(w.Body.String(), "<RequestId>RID</RequestId>") {
		t.Errorf("no request ID: %s", w.Body)
	}
}

func TestDispatch(t *testing.T) {
	api := New(Services{}, testConfig(func(c *Config) { c.Domain = "s3.example.com" }), nil)
	tests := []struct {
		method, target, host string
		op                   string
		implemented          bool
		bucket, key          string
	}{
		{"GET", "/", "", "ListBuckets", true, "", ""},
		{"PUT", "/b", "", "CreateBucket", true, "b", ""},
		{"GET", "/b?list-type=2&x-id=ListObjectsV2", "", "ListObjectsV2", true, "b", ""},
		{"GET", "/b?location", "", "GetBucketLocation", true, "b", ""},
		{"GET", "/b?policy", "", "GetBucketPolicy", true, "b", ""},
		{"GET", "/b?versions", "", "ListObjectVersions", true, "b", ""},
		{"POST", "/b?delete", "", "DeleteObjects", true, "b", ""},
		{"PUT", "/b/a//c/../d", "", "PutObject", true, "b", "a//c/../d"},
		{"PUT", "/b/k?partNumber=1&uploadId=x", "", "UploadPart", true, "b", "k"},
		{"POST", "/b/k?uploads", "", "CreateMultipartUpload", true, "b", "k"},
		{"POST", "/b/k?uploadId=x", "", "CompleteMultipartUpload", true, "b", "k"},
		{"DELETE", "/b/k?uploadId=x", "", "AbortMultipartUpload", true, "b", "k"},
		{"GET", "/b/k?uploadId=x", "", "ListParts", true, "b", "k"},
		{"GET", "/b/k?tagging", "", "GetObjectTagging", true, "b", "k"},
		{"PUT", "/b?tagging", "", "PutBucketTagging", true, "b", ""},
		{"GET", "/b/k?torrent", "", "GetObject?torrent", false, "b", "k"},
		{"GET", "/b/k?retention", "", "GetObjectRetention", true, "b", "k"},
		{"PUT", "/b/k?legal-hold", "", "PutObjectLegalHold", true, "b", "k"},
		{"DELETE", "/b/k?legal-hold", "", "DeleteObject?legal-hold", false, "b", "k"},
		{"PUT", "/b?object-lock", "", "PutObjectLockConfiguration", true, "b", ""},
		{"GET", "/b/k?response-content-type=x", "", "GetObject", true, "b", "k"},
		{"GET", "/k/x", "vhost.s3.example.com", "GetObject", true, "vhost", "k/x"},
		{"GET", "/", "vhost.s3.example.com:9000", "ListObjects", true, "vhost", ""},
		{"PATCH", "/b/k", "", "UnknownObjectOperation", true, "b", "k"},
	}
	for _, tc := range tests {
		r := httptest.NewRequest(tc.method, "http://127.0.0.1"+tc.target, nil)
		if tc.host != "" {
			r.Host = tc.host
		}
		q := &request{Request: r}
		q.bucket, q.key = api.address(r)
		op, h := api.dispatch(q)
		if op != tc.op || (h != nil) != tc.implemented || q.bucket != tc.bucket || q.key != tc.key {
			t.Errorf("%s %s (%s): op %s impl %v bucket %q key %q", tc.method, tc.target, tc.host, op, h != nil, q.bucket, q.key)
		}
	}
}

// parsedStrictly checks parseXML's contract on one input: an error is
// MalformedXML, and an accepted body stops being accepted with anything
// but whitespace appended.
func parsedStrictly[T any](t *testing.T, body []byte) (T, bool) {
	var v T
	if err := parseXML(body, &v); err != nil {
		if c := s3err.Translate(err).Code; c != s3err.MalformedXML {
			t.Fatalf("unexpected error class %v", err)
		}
		return v, false
	}
	// Accepted, it holds only elements of the schema: one more, unknown,
	// right inside the root is refused.
	dec := xml.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.RawToken()
		if err != nil {
			t.Fatalf("accepted body %q has no root: %v", body, err)
		}
		if _, ok := tok.(xml.StartElement); ok {
			break
		}
	}
	at := dec.InputOffset()
	var again T
	if err := parseXML(append(append(append([]byte{}, body[:at]...), "<CofferUnknown/>"...), body[at:]...), &again); err == nil {
		t.Fatalf("accepted an unknown element inside the accepted body %q", body)
	}
	for _, tail := range []string{"x", "<a/>", "<!-- c -->", "&amp;"} {
		if err := parseXML(append(append([]byte{}, body...), tail...), &again); err == nil {
			t.Fatalf("accepted %q after an accepted body %q", tail, body)
		}
	}
	if err := parseXML(append(append([]byte{}, body...), " \r\n\t"...), &again); err != nil {
		t.Fatalf("trailing whitespace refused: %v", err)
	}
	if _, err := xml.Marshal(v); err != nil {
		t.Fatal(err)
	}
	return v, true
}

func FuzzCompleteMultipartUploadXML(f *testing.F) {
	f.Add([]byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"abc"</ETag></Part></CompleteMultipartUpload>`))
	f.Add([]byte(`<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/"></CompleteMultipartUpload>`))
	f.Add([]byte(`<!DOCTYPE x [<!ENTITY a "aaaa">]><CompleteMultipartUpload>&a;</CompleteMultipartUpload>`))
	f.Add([]byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<CompleteMultipartUpload></CompleteMultipartUpload>` + "\n"))
	f.Add([]byte(`<CompleteMultipartUpload></CompleteMultipartUpload><CompleteMultipartUpload><Part><PartNumber>2</PartNumber></Part></CompleteMultipartUpload>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		parsedStrictly[completeMultipartUpload](t, body)
	})
}

func FuzzDeleteObjectsXML(f *testing.F) {
	f.Add([]byte(`<Delete><Quiet>true</Quiet><Object><Key>a</Key></Object><Object><Key>b</Key><VersionId>v</VersionId></Object></Delete>`))
	f.Add([]byte(`<Delete><Object><Key>` + strings.Repeat("k", 2000) + `</Key></Object></Delete>`))
	f.Add([]byte(`<Delete><Object><Key>a</Key><ETag>"e"</ETag><Size>3</Size><LastModifiedTime>x</LastModifiedTime></Object></Delete>  `))
	f.Fuzz(func(t *testing.T, body []byte) {
		parsedStrictly[deleteRequest](t, body)
	})
}

func FuzzCreateBucketXML(f *testing.F) {
	f.Add([]byte(`<CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LocationConstraint>us-east-1</LocationConstraint></CreateBucketConfiguration>`))
	f.Add([]byte(`<CreateBucketConfiguration><Location><Type>AvailabilityZone</Type></Location><Bucket><Type>Directory</Type></Bucket></CreateBucketConfiguration>`))
	f.Add([]byte(`<CreateBucketConfiguration/>trailing`))
	f.Fuzz(func(t *testing.T, body []byte) {
		parsedStrictly[createBucketConfiguration](t, body)
	})
}

func FuzzVersioningXML(f *testing.F) {
	f.Add([]byte(`<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>`))
	f.Add([]byte(`<VersioningConfiguration><Status>Suspended</Status><MfaDelete>Disabled</MfaDelete></VersioningConfiguration>`))
	f.Add([]byte(`<VersioningConfiguration><Status></Status><Status>Enabled</Status></VersioningConfiguration>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		parsedStrictly[versioningConfiguration](t, body)
	})
}

func FuzzBucketEncryptionXML(f *testing.F) {
	f.Add([]byte(`<ServerSideEncryptionConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>`))
	f.Add([]byte(`<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>aws:kms</SSEAlgorithm><KMSMasterKeyID>alias/k</KMSMasterKeyID></ApplyServerSideEncryptionByDefault><BucketKeyEnabled>true</BucketKeyEnabled></Rule></ServerSideEncryptionConfiguration>`))
	f.Add([]byte(`<ServerSideEncryptionConfiguration><Rule/><Rule/></ServerSideEncryptionConfiguration>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		parsedStrictly[sseConfiguration](t, body)
		enc, key, err := parseSSEConfiguration(body)
		if err == nil {
			if verr := meta.ValidBucketEncryption(enc, key); verr != nil || enc == "" {
				t.Fatalf("parseSSEConfiguration(%q) = %q, %q: not a valid setting (%v)", body, enc, key, verr)
			}
		}
	})
}

// TestXMLSchemas: the schema parseXML derives from each body's type names
// the elements S3 defines, and parts refused whole take any content.
func TestXMLSchemas(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		body string
	}{
		{"complete with checksums", &completeMultipartUpload{}, `<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Part><ChecksumCRC32>AAAAAA==</ChecksumCRC32><ChecksumCRC32C>AAAAAA==</ChecksumCRC32C><ChecksumCRC64NVME>AAAAAAAAAAA=</ChecksumCRC64NVME><ChecksumSHA1>x</ChecksumSHA1><ChecksumSHA256>y</ChecksumSHA256><ETag>"e"</ETag><PartNumber>1</PartNumber></Part></CompleteMultipartUpload>`},
		{"directory bucket", &createBucketConfiguration{}, `<CreateBucketConfiguration><Location><Name>usw2-az1</Name><Type>AvailabilityZone</Type></Location><Bucket><DataRedundancy>SingleAvailabilityZone</DataRedundancy><Type>Directory</Type></Bucket></CreateBucketConfiguration>`},
		{"bucket tags", &createBucketConfiguration{}, `<CreateBucketConfiguration><Tags><Tag><Key>k</Key><Value>v</Value></Tag></Tags></CreateBucketConfiguration>`},
		{"blocked encryption types", &sseConfiguration{}, `<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault><BucketKeyEnabled>true</BucketKeyEnabled><BlockedEncryptionTypes><EncryptionType>SSE-C</EncryptionType></BlockedEncryptionTypes></Rule></ServerSideEncryptionConfiguration>`},
	} {
		if err := parseXML([]byte(tc.body), tc.v); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	for _, tc := range []struct {
		name string
		v    any
		body string
	}{
		{"unknown element in Part", &completeMultipartUpload{}, `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"e"</ETag><Size>1</Size></Part></CompleteMultipartUpload>`},
		{"unknown element in a configuration", &createBucketConfiguration{}, `<CreateBucketConfiguration><LocationConstraint>us-east-1</LocationConstraint><ObjectLockEnabled>true</ObjectLockEnabled></CreateBucketConfiguration>`},
		{"unknown element in a rule", &sseConfiguration{}, `<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>aws:kms</SSEAlgorithm><KMSMasterKeyId>k</KMSMasterKeyId></ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>`},
		{"too deep inside a part refused whole", &createBucketConfiguration{}, `<CreateBucketConfiguration><Tags>` + strings.Repeat("<a>", 100) + strings.Repeat("</a>", 100) + `</Tags></CreateBucketConfiguration>`},
	} {
		if err := parseXML([]byte(tc.body), tc.v); s3err.Translate(err).Code != s3err.MalformedXML {
			t.Errorf("%s: %v, want MalformedXML", tc.name, err)
		}
	}
}

func TestParseXML(t *testing.T) {
	const root = `<Delete><Object><Key>a</Key></Object></Delete>`
	tests := []struct {
		name, body string
		ok         bool
	}{
		{"plain", root, true},
		{"declaration and whitespace", `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + root + "\r\n \t", true},
		{"namespace", `<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>a</Key></Object></Delete>`, true},
		{"empty", "", false},
		{"whitespace only", " \n", false},
		{"text after root", root + "junk", false},
		{"second root", root + `<Delete><Object><Key>b</Key></Object></Delete>`, false},
		{"comment after root", root + "<!-- x -->", false},
		{"wrong root", `<CompleteMultipartUpload/>`, false},
		{"unclosed", `<Delete><Object><Key>a</Key></Object>`, false},
		{"undeclared entity", `<Delete><Object><Key>&x;</Key></Object></Delete>`, false},
		{"comment inside", `<Delete><!-- c --><Object><Key>a</Key></Object></Delete>`, true},
		{"every field", `<Delete><Quiet>true</Quiet><Object><Key>a</Key><VersionId>null</VersionId><ETag>"e"</ETag><LastModifiedTime>t</LastModifiedTime><Size>1</Size></Object></Delete>`, true},
		// Schema violations (issue 18): refused, not ignored.
		{"unknown element", `<Delete><Object><Key>a</Key></Object><Objects/></Delete>`, false},
		{"unknown element in Object", `<Delete><Object><Key>a</Key><Owner>x</Owner></Object></Delete>`, false},
		{"element inside a leaf", `<Delete><Object><Key><b>a</b></Key></Object></Delete>`, false},
		{"lowercase name", `<Delete><object><Key>a</Key></object></Delete>`, false},
		{"text among elements", `<Delete>junk<Object><Key>a</Key></Object></Delete>`, false},
		{"text before the root", `junk` + root, false},
		{"doctype", `<!DOCTYPE Delete>` + root, false},
		{"200,000 nested unknown elements", `<Delete>` + strings.Repeat("<a>", 200_000) + strings.Repeat("</a>", 200_000) + `</Delete>`, false},
		{"too deep, known names", strings.Repeat("<Delete>", 20) + strings.Repeat("</Delete>", 20), false},
		{"too many elements", `<Delete>` + strings.Repeat(`<Object><Key>a</Key></Object>`, maxXMLElements/2+1) + `</Delete>`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var v deleteRequest
			err := parseXML([]byte(tc.body), &v)
			if got, want := err == nil, tc.ok; got != want {
				t.Fatalf("accepted %v, want %v (err %v)", got, want, err)
			}
			if err != nil {
				if got, want := s3err.Translate(err).Code, s3err.MalformedXML; got != want {
					t.Errorf("code %s, want %s", got, want)
				}
			}
		})
	}
}
