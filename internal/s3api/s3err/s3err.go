// Package s3err is the S3 API's single translation point from Coffer's
// error codes to S3 error codes, HTTP statuses and XML bodies. Every S3
// error response goes through Write.
package s3err

import (
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// APIError is one row of the S3 error table.
type APIError struct {
	Code    string
	Status  int
	Message string
}

// Table lists every S3 error Coffer sends.
var Table = map[string]APIError{}

func def(code string, status int, msg string) string {
	Table[code] = APIError{Code: code, Status: status, Message: msg}
	return code
}

// S3 error codes.
var (
	AccessDenied                      = def("AccessDenied", 403, "Access Denied.")
	AccessForbidden                   = def("AccessForbidden", 403, "CORSResponse: This CORS request is not allowed.")
	NoSuchCORSConfiguration           = def("NoSuchCORSConfiguration", 404, "The CORS configuration does not exist")
	AccessControlListNotSupported     = def("AccessControlListNotSupported", 400, "The bucket does not allow ACLs.")
	InvalidBucketAclWithOwnership     = def("InvalidBucketAclWithObjectOwnership", 400, "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting.")
	MalformedACLError                 = def("MalformedACLError", 400, "The XML you provided was not well-formed or did not validate against our published schema.")
	OwnershipControlsNotFound         = def("OwnershipControlsNotFoundError", 404, "The bucket ownership controls were not found.")
	UnexpectedContent                 = def("UnexpectedContent", 400, "This request does not support content.")
	UnresolvableGrantByEmailAddress   = def("UnresolvableGrantByEmailAddress", 400, "The e-mail address you provided does not match any account on record.")
	AuthorizationHeaderMalformed      = def("AuthorizationHeaderMalformed", 400, "The authorization header is malformed.")
	AuthorizationQueryParametersError = def("AuthorizationQueryParametersError", 400, "Error parsing the X-Amz-Credential parameter.")
	BadDigest                         = def("BadDigest", 400, "The Content-MD5 or checksum you specified did not match what we received.")
	BucketAlreadyExists               = def("BucketAlreadyExists", 409, "The requested bucket name is not available.")
	BucketAlreadyOwnedByYou           = def("BucketAlreadyOwnedByYou", 409, "Your previous request to create the named bucket succeeded and you already own it.")
	BucketNotEmpty                    = def("BucketNotEmpty", 409, "The bucket you tried to delete is not empty.")
	EntityTooLarge                    = def("EntityTooLarge", 400, "Your proposed upload exceeds the maximum allowed object size.")
	EntityTooSmall                    = def("EntityTooSmall", 400, "Your proposed upload is smaller than the minimum allowed size")
	ExpiredToken                      = def("ExpiredToken", 400, "The provided token has expired.")
	IncompleteBody                    = def("IncompleteBody", 400, "You did not provide the number of bytes specified by the Content-Length HTTP header.")
	InternalError                     = def("InternalError", 500, "We encountered an internal error. Please try again.")
	IllegalLocationConstraint         = def("IllegalLocationConstraintException", 400, "The location constraint is incompatible with the region of this endpoint.")
	InvalidAccessKeyID                = def("InvalidAccessKeyId", 403, "The AWS Access Key Id you provided does not exist in our records.")
	InvalidArgument                   = def("InvalidArgument", 400, "Invalid Argument.")
	InvalidBucketState                = def("InvalidBucketState", 409, "The request is not valid with the current state of the bucket.")
	MissingRequestBody                = def("MissingRequestBodyError", 400, "Request Body is empty")
	ObjectLockConfigurationNotFound   = def("ObjectLockConfigurationNotFoundError", 404, "Object Lock configuration does not exist for this bucket.")
	NoSuchObjectLockConfiguration     = def("NoSuchObjectLockConfiguration", 400, "The specified object does not have a ObjectLock configuration.")
	SSEConfigNotFound                 = def("ServerSideEncryptionConfigurationNotFoundError", 404, "The server side encryption configuration was not found.")
	KMSNotFound                       = def("KMS.NotFoundException", 400, "Invalid keyId.")
	KMSDisabled                       = def("KMS.DisabledException", 400, "The KMS key is disabled or not usable.")
	InvalidBucketName                 = def("InvalidBucketName", 400, "The specified bucket is not valid.")
	InvalidDigest                     = def("InvalidDigest", 400, "The Content-MD5 or checksum you specified is not valid.")
	InvalidPartNumber                 = def("InvalidPartNumber", 416, "The requested partnumber is not satisfiable.")
	InvalidPart                       = def("InvalidPart", 400, "One or more of the specified parts could not be found.  The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.")
	InvalidPartOrder                  = def("InvalidPartOrder", 400, "The list of parts was not in ascending order. Parts must be ordered by part number.")
	InvalidRange                      = def("InvalidRange", 416, "The requested range is not satisfiable.")
	InvalidRequest                    = def("InvalidRequest", 400, "Invalid Request.")
	InvalidPolicyDocument             = def("InvalidPolicyDocument", 400, "The content of the form does not meet the conditions specified in the policy document.")
	MalformedPOSTRequest              = def("MalformedPOSTRequest", 400, "The body of your POST request is not well-formed multipart/form-data.")
	MaxPostPreDataLengthExceeded      = def("MaxPostPreDataLengthExceededError", 400, "Your POST request fields preceding the upload file were too large.")
	IncorrectNumberOfFiles            = def("IncorrectNumberOfFilesInPostRequest", 400, "POST requires exactly one file upload per request.")
	KeyTooLongError                   = def("KeyTooLongError", 400, "Your key is too long.")
	MetadataTooLarge                  = def("MetadataTooLarge", 400, "Your metadata headers exceed the maximum allowed metadata size.")
	MalformedPolicy                   = def("MalformedPolicy", 400, "Policy has invalid resource.")
	PolicyTooLarge                    = def("PolicyTooLarge", 400, "Policy exceeds the maximum allowed document size.")
	MalformedXML                      = def("MalformedXML", 400, "The XML you provided was not well-formed or did not validate against our published schema.")
	MethodNotAllowed                  = def("MethodNotAllowed", 405, "The specified method is not allowed against this resource.")
	MissingContentLength              = def("MissingContentLength", 411, "You must provide the Content-Length HTTP header.")
	MissingSecurityHeader             = def("MissingSecurityHeader", 400, "Your request is missing a required header.")
	NoSuchBucket                      = def("NoSuchBucket", 404, "The specified bucket does not exist.")
	NoSuchKey                         = def("NoSuchKey", 404, "The specified key does not exist.")
	InvalidTag                        = def("InvalidTag", 400, "The tag provided was not a valid tag.")
	BadRequest                        = def("BadRequest", 400, "Bad Request")
	NoSuchPublicAccessBlock           = def("NoSuchPublicAccessBlockConfiguration", 404, "The public access block configuration was not found")
	NoSuchBucketPolicy                = def("NoSuchBucketPolicy", 404, "The bucket policy does not exist.")
	NoSuchLifecycleConfiguration      = def("NoSuchLifecycleConfiguration", 404, "The lifecycle configuration does not exist.")
	NoSuchTagSet                      = def("NoSuchTagSet", 404, "The TagSet does not exist.")
	NoSuchVersion                     = def("NoSuchVersion", 404, "The specified version does not exist.")
	NoSuchUpload                      = def("NoSuchUpload", 404, "The specified multipart upload does not exist. The upload ID might be invalid, or the multipart upload might have been aborted or completed.")
	NotImplemented                    = def("NotImplemented", 501, "A header or query you provided implies functionality that is not implemented.")
	NotModified                       = def("NotModified", 304, "Not Modified.")
	PreconditionFailed                = def("PreconditionFailed", 412, "At least one of the pre-conditions you specified did not hold.")
	QuotaExceeded                     = def("QuotaExceeded", 403, "The upload would exceed the bucket owner's storage quota.")
	RequestTimeTooSkewed              = def("RequestTimeTooSkewed", 403, "The difference between the request time and the server's time is too large.")
	RequestTimeout                    = def("RequestTimeout", 400, "Your socket connection to the server was not read from or written to within the timeout period.")
	ServiceUnavailable                = def("ServiceUnavailable", 503, "Please reduce your request rate.")
	SignatureDoesNotMatch             = def("SignatureDoesNotMatch", 403, "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
	SlowDown                          = def("SlowDown", 503, "Please reduce your request rate.")
	StorageFull                       = def("XMinioStorageFull", 507, "The server's storage is full. Delete objects to make room, then retry.")
	XAmzContentSHA256Mismatch         = def("XAmzContentSHA256Mismatch", 400, "The provided 'x-amz-content-sha256' header does not match what was computed.")
	ClientClosedRequest               = def("ClientClosedRequest", 499, "The client closed the request.")
)

// New returns an error that translates to the S3 code code, with an
// optional message overriding the table's.
func New(code, message string) error {
	e := &errcode.Error{Code: fallback(code), Message: message, Detail: map[string]any{"s3_code": code}}
	if message == "" {
		e.Message = Table[code].Message
	}
	return e
}

// fallback is the errcode of an S3 code, for logs and metrics.
func fallback(code string) errcode.Code {
	switch Table[code].Status {
	case 400, 411:
		return errcode.InvalidArgument
	case 403:
		return errcode.PermissionDenied
	case 404:
		return errcode.NotFound
	case 405:
		return errcode.MethodNotAllowed
	case 409:
		return errcode.Conflict
	case 412:
		return errcode.PreconditionFailed
	case 416:
		return errcode.RangeNotSatisfiable
	case 501:
		return errcode.NotImplemented
	case 503:
		return errcode.Unavailable
	case 507:
		return errcode.StorageFull
	}
	return errcode.Internal
}

// Translate returns the S3 error for err. An explicit S3 code in the
// error's Detail["s3_code"] wins; otherwise the errcode (refined by
// Detail["resource"] and Detail["reason"]) decides.
func Translate(err error) APIError {
	e := errcode.As(err)
	if e != nil {
		if c, ok := e.Detail["s3_code"].(string); ok {
			if row, ok := Table[c]; ok {
				return withMessage(row, e.Message)
			}
		}
	}
	code := errcode.Of(err)
	reason, resource, alg := "", "", ""
	if e != nil {
		reason, _ = e.Detail["reason"].(string)
		resource, _ = e.Detail["resource"].(string)
		alg, _ = e.Detail["algorithm"].(string)
	}
	row := func(c string) APIError {
		if e != nil {
			return withMessage(Table[c], e.Message)
		}
		return Table[c]
	}
	switch code {
	case errcode.InvalidArgument:
		switch reason {
		case "customer_key_required", "not_customer_encrypted", "customer_key_params_mismatch", "invalid_checksum_type", "invalid_request":
			return row(InvalidRequest)
		case "key_too_long":
			return row(KeyTooLongError)
		// The next three answer S3's own words (test suites compare
		// them), not the fault's: the file API's problem names the part.
		case "invalid_part":
			return Table[InvalidPart]
		case "invalid_part_order":
			return Table[InvalidPartOrder]
		case "entity_too_small":
			return Table[EntityTooSmall]
		case "invalid_bucket_name":
			return row(InvalidBucketName)
		case "malformed_xml":
			return row(MalformedXML)
		case "invalid_tag":
			return row(InvalidTag)
		case "tag_count":
			return row(BadRequest)
		case "malformed_acl":
			return row(MalformedACLError)
		case "object_lock_disabled":
			return row(InvalidRequest)
		}
		return row(InvalidArgument)
	case errcode.NotFound:
		switch resource {
		case "kms_key":
			return row(KMSNotFound)
		case "bucket":
			return Table[NoSuchBucket]
		case "upload":
			return Table[NoSuchUpload]
		case "version":
			return Table[NoSuchVersion]
		case "tag_set":
			return Table[NoSuchTagSet]
		case "lifecycle":
			return Table[NoSuchLifecycleConfiguration]
		case "cors":
			return Table[NoSuchCORSConfiguration]
		case "bucket_policy":
			return Table[NoSuchBucketPolicy]
		case "public_access_block":
			return Table[NoSuchPublicAccessBlock]
		}
		return Table[NoSuchKey]
	case errcode.AlreadyExists:
		return row(BucketAlreadyExists)
	case errcode.Conflict:
		switch reason {
		case "bucket_not_empty":
			return Table[BucketNotEmpty]
		case "object_lock_enabled":
			// S3 answers 400 here, not InvalidBucketState's usual 409.
			r := withMessage(Table[InvalidBucketState], "An Object Lock configuration is present on this bucket, so the versioning state cannot be changed.")
			r.Status = http.StatusBadRequest
			return r
		}
		return row(InvalidRequest)
	case errcode.PreconditionFailed:
		if reason == "no_object" {
			return Table[NoSuchKey] // If-Match on a missing key: S3's 404
		}
		return Table[PreconditionFailed]
	case errcode.NotModified:
		return Table[NotModified]
	case errcode.RangeNotSatisfiable:
		return Table[InvalidRange]
	case errcode.Unauthenticated, errcode.PermissionDenied:
		switch {
		case resource == "kms_key":
			return row(KMSDisabled)
		case reason == "object_locked":
			return withMessage(Table[AccessDenied], "Access Denied because object protected by object lock.")
		}
		return Table[AccessDenied]
	case errcode.TooLarge:
		if reason == "metadata_too_large" {
			return row(MetadataTooLarge)
		}
		return row(EntityTooLarge)
	case errcode.QuotaExceeded:
		return Table[QuotaExceeded]
	case errcode.ChecksumMismatch:
		if alg == "sha256" {
			return Table[XAmzContentSHA256Mismatch]
		}
		return Table[BadDigest]
	case errcode.IncompleteBody:
		return Table[IncompleteBody]
	case errcode.RateLimited:
		return Table[SlowDown]
	case errcode.Unavailable:
		return Table[ServiceUnavailable]
	case errcode.Timeout:
		return Table[RequestTimeout]
	case errcode.Canceled:
		return Table[ClientClosedRequest]
	case errcode.NotImplemented:
		return row(NotImplemented)
	case errcode.MethodNotAllowed:
		return Table[MethodNotAllowed]
	case errcode.StorageFull:
		return Table[StorageFull]
	}
	return Table[InternalError]
}

// withMessage gives row the error's own message: for every client error,
// and for NotImplemented, whose message names the header, parameter or
// feature Coffer refuses (written for the client; it carries no
// internals). Other server errors (500, 503) keep the table's generic
// message: theirs may describe the server's insides.
func withMessage(row APIError, msg string) APIError {
	if msg != "" && (row.Status < 500 || row.Code == NotImplemented) {
		row.Message = msg
	}
	return row
}

// ErrorResponse is the S3 XML error body.
type ErrorResponse struct {
	XMLName    xml.Name `xml:"Error"`
	Code       string   `xml:"Code"`
	Message    string   `xml:"Message"`
	Key        string   `xml:"Key,omitempty"`
	BucketName string   `xml:"BucketName,omitempty"`
	Resource   string   `xml:"Resource,omitempty"`
	RequestID  string   `xml:"RequestId"`
	HostID     string   `xml:"HostId"`
	// TraceID is the request's trace ID when tracing is on (Coffer's
	// own element: S3 clients ignore elements they do not know).
	TraceID string `xml:"TraceId,omitempty"`
	// Extra are the elements S3 adds for some errors (ArgumentName,
	// ProposedSize, Condition, ...), from the error's details (extraFields).
	Extra []Element `xml:",any"`
}

// Element is one extra element of an error body.
type Element struct {
	XMLName xml.Name
	Value   string `xml:",chardata"`
}

// extraFields maps error details to the elements S3 names them with, in
// the order they are written ("bytes" elements are the hex bytes, space
// separated, of the detail before them: StringToSignBytes,
// CanonicalRequestBytes).
var extraFields = [...]struct{ detail, element string }{
	{"argument_name", "ArgumentName"},
	{"argument_value", "ArgumentValue"},
	{"condition", "Condition"},
	{"proposed_size", "ProposedSize"},
	{"min_size_allowed", "MinSizeAllowed"},
	{"max_size_allowed", "MaxSizeAllowed"},
	{"access_key_id", "AWSAccessKeyId"},
	{"string_to_sign", "StringToSign"},
	{"signature_provided", "SignatureProvided"},
	{"string_to_sign", "StringToSignBytes"},
	{"canonical_request", "CanonicalRequest"},
	{"canonical_request", "CanonicalRequestBytes"},
	{"x_amz_expires", "X-Amz-Expires"},
	{"expires", "Expires"},
	{"server_time", "ServerTime"},
	{"headers_not_signed", "HeadersNotSigned"},
}

func extra(err error) []Element {
	e := errcode.As(err)
	if e == nil {
		return nil
	}
	var out []Element
	for _, f := range extraFields {
		v, ok := e.Detail[f.detail]
		if !ok {
			continue
		}
		s := fmt.Sprint(v)
		if strings.HasSuffix(f.element, "Bytes") {
			s = hexBytes(s)
		}
		out = append(out, Element{XMLName: xml.Name{Local: f.element}, Value: s})
	}
	return out
}

// hexBytes is s as S3 shows a string's bytes: two hex digits each, space
// separated.
func hexBytes(s string) string {
	b := make([]byte, 0, 3*len(s))
	for i := 0; i < len(s); i++ {
		if i > 0 {
			b = append(b, ' ')
		}
		b = hex.AppendEncode(b, []byte{s[i]})
	}
	return string(b)
}

// Write sends err as an S3 error. HEAD responses carry no body. It
// returns the row used (for logs).
//
// traceID, if not "", is the request's trace ID (tracing on): sent as the
// TraceId element after HostId.
func Write(w http.ResponseWriter, r *http.Request, err error, bucket, key, requestID, traceID string) APIError {
	row := Translate(err)
	h := w.Header()
	if e := errcode.As(err); e != nil && e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int((e.RetryAfter+time.Second-1)/time.Second)))
	} else if row.Status == 503 {
		h.Set("Retry-After", "1")
	}
	h.Del("Content-Length")
	h.Del("ETag")
	h.Del("Last-Modified")
	if row.Status != http.StatusRequestedRangeNotSatisfiable {
		h.Del("Content-Range")
	}
	h.Set("x-amz-request-id", requestID)
	if traceID != "" {
		h.Set("X-Coffer-Trace-Id", traceID)
	}
	if e := errcode.As(err); e != nil && e.Detail["delete_marker"] == true {
		// A key whose latest version is a delete marker (404), or a
		// version that is one (405): S3 says which.
		h.Set("x-amz-delete-marker", "true")
		if id, _ := e.Detail["version_id"].(string); id != "" {
			h.Set("x-amz-version-id", id)
		}
	}
	if row.Status == http.StatusNotModified {
		w.WriteHeader(row.Status)
		return row
	}
	h.Set("Content-Type", "application/xml")
	w.WriteHeader(row.Status)
	if r.Method == http.MethodHead {
		return row
	}
	body := ErrorResponse{Code: row.Code, Message: row.Message, Key: key, BucketName: bucket,
		Resource: r.URL.Path, RequestID: requestID, HostID: requestID, TraceID: traceID, Extra: extra(err)}
	w.Write([]byte(xml.Header))
	_ = xml.NewEncoder(w).Encode(body)
	return row
}

// Codes returns every errcode's S3 code, for tests that the table is total.
func Codes() map[errcode.Code]string {
	out := map[errcode.Code]string{}
	for _, c := range errcode.All() {
		out[c] = Translate(&errcode.Error{Code: c}).Code
	}
	return out
}

// Kind is the cause carried by every error the request-signing packages
// (sigv4, sigv2) return: it names the S3 error code and the errcode.Code,
// and it is what errors.Is matches.
type Kind struct {
	S3   string
	Code errcode.Code
	Text string
}

func (k *Kind) Error() string { return k.Text }

// NewKind returns a Kind as an error, for a package's table of causes.
func NewKind(s3 string, code errcode.Code, text string) error {
	return &Kind{S3: s3, Code: code, Text: text}
}

// Wrap returns an error of kind k (made by NewKind) with a client-safe
// message: errors.Is(err, k) holds, its Code is k's and its
// Detail["s3_code"] is k's S3 code.
func Wrap(k error, format string, args ...any) *errcode.Error {
	kk := k.(*Kind)
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	return &errcode.Error{
		Code:    kk.Code,
		Message: msg,
		Err:     kk,
		Detail:  map[string]any{"s3_code": kk.S3},
	}
}

// CodeOf returns the S3 error code (e.g. "SignatureDoesNotMatch") carried
// by err's Detail["s3_code"], or "" if err does not carry one.
func CodeOf(err error) string {
	e := errcode.As(err)
	if e == nil {
		return ""
	}
	s, _ := e.Detail["s3_code"].(string)
	return s
}

// With adds a detail to e and returns it (for the signing packages' errors).
func With(e *errcode.Error, key string, value any) *errcode.Error {
	e.Detail[key] = value
	return e
}

// Clip shortens client input quoted back in an error message.
func Clip(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// Secret looks the secret of access key id up for the signing packages:
// an error of kind unknown (their ErrInvalidAccessKeyID) for a key lookup
// does not know (errcode.NotFound, or no secret); lookup's other errors
// unchanged.
func Secret(lookup func(id string) (string, error), id string, unknown error) (string, error) {
	secret, err := lookup(id)
	switch {
	case errcode.Is(err, errcode.NotFound), err == nil && secret == "":
		return "", With(Wrap(unknown, "The AWS Access Key Id you provided does not exist in our records."), "access_key_id", id)
	case err != nil:
		return "", err
	}
	return secret, nil
}
