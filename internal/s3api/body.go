package s3api

import (
	"bytes"
	"encoding"
	"encoding/xml"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/coffer-storage/coffer/internal/integrity"
	"github.com/coffer-storage/coffer/internal/s3api/s3err"
)

// readXML reads the XML body of a request (CreateBucket,
// CompleteMultipartUpload, DeleteObjects) and decodes it into v. It is the
// only way the S3 API reads a body it parses itself, so that no such body
// has any effect before all of it has been verified:
//
//  1. The whole body, at most Config.MaxXMLBody bytes (EntityTooLarge),
//     is read to EOF through every check the request asks for: the signed
//     SHA-256 of x-amz-content-sha256 (XAmzContentSHA256Mismatch), the
//     chunk and trailer signatures and trailing checksum of aws-chunked
//     bodies (SignatureDoesNotMatch, BadDigest), Content-MD5 and
//     x-amz-checksum-* (BadDigest), and the announced length
//     (IncompleteBody).
//  2. Only then are the bytes parsed, strictly (parseXML): one root
//     element and nothing but whitespace after it, else MalformedXML.
//
// An empty body is MalformedXML; where the body is optional (CreateBucket)
// the caller uses readBody and parses only a non-empty one.
func (api *API) readXML(q *request, v any) error {
	data, err := api.readBody(q)
	if err != nil {
		return err
	}
	return parseXML(data, v)
}

// readBody returns the request body, bounded and verified to EOF as readXML
// describes.
func (api *API) readBody(q *request) ([]byte, error) {
	limit := api.cfg.MaxXMLBody
	if q.ContentLength > limit && !(q.pay.signed && q.pay.res.Payload.Chunked()) {
		return nil, s3err.New(s3err.EntityTooLarge, "XML body too large")
	}
	body, size, err := q.body()
	if err != nil {
		return nil, err
	}
	if size > limit {
		return nil, s3err.New(s3err.EntityTooLarge, "XML body too large")
	}
	md5sum, err := contentMD5(q.Header)
	if err != nil {
		return nil, err
	}
	var alg integrity.Algorithm
	var want []byte
	if q.op != "CompleteMultipartUpload" { // there it is the object's (completionExpect)
		if alg, want, err = headerChecksum(q.Header); err != nil {
			return nil, err
		}
	}
	if q.pay.trailerAlg != integrity.NoChecksum {
		alg, want = integrity.NoChecksum, nil // verified by the aws-chunked trailer decoder
	}
	vr := integrity.NewReader(body, integrity.Options{
		Size: size, Limit: limit, LimitErr: func() error { return s3err.New(s3err.EntityTooLarge, "XML body too large") },
		SHA256: q.pay.sha256, MD5: md5sum, NoMD5: md5sum == nil,
		ChecksumAlgorithm: alg.String(), ChecksumWant: want,
	})
	var buf bytes.Buffer
	if size > 0 {
		buf.Grow(int(size))
	}
	if _, err := buf.ReadFrom(vr); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Bounds of the XML bodies parseXML takes: the deepest body S3 defines
// (ServerSideEncryptionConfiguration>Rule>ApplyServerSideEncryptionByDefault>
// SSEAlgorithm) is 4 elements deep, the largest a CompleteMultipartUpload of
// 10,000 parts of at most 8 elements each.
const (
	maxXMLDepth    = 16
	maxXMLElements = 100_000
)

// parseXML decodes data, a complete and verified body, into v, a pointer
// to a struct whose xml tags are the schema S3 defines for the body. It
// is strict where encoding/xml is lenient, and reads the body as a stream
// of tokens first, stopping at the first fault, so no body costs more
// than its bounds:
//
//   - exactly one root element (the one v's XMLName names), optionally
//     after an XML declaration and comments, followed by nothing but
//     whitespace;
//   - every element must be one the schema has at its place: an unknown
//     element (or an element inside a leaf) is MalformedXML, not ignored,
//     so no setting a client sent is silently dropped. Names are matched
//     without their namespace (mc and s3cmd send none; as encoding/xml).
//     A field of type xmlAny takes any content (parts of a body Coffer
//     refuses with NotImplemented as a whole);
//   - no text inside elements that hold elements, no DOCTYPE or other
//     directive;
//   - at most maxXMLDepth levels and maxXMLElements elements.
//
// Anything else is MalformedXML.
func parseXML(data []byte, v any) error {
	if err := checkXML(data, schemaOf(reflect.TypeOf(v))); err != nil {
		return s3err.New(s3err.MalformedXML, err.Error())
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return s3err.New(s3err.MalformedXML, "")
	}
	// Decode stopped at the end of the root element: what follows must
	// be whitespace only (not a second root, not text, not comments).
	rest := data[dec.InputOffset():]
	if len(bytes.TrimLeft(rest, " \t\r\n")) != 0 {
		return s3err.New(s3err.MalformedXML, "unexpected content after the root element")
	}
	return nil
}

// xmlAny is an element parseXML accepts with any content (bounded all
// the same): for settings Coffer refuses whole, whose inner schema does
// not matter.
type xmlAny struct {
	Inner []byte `xml:",innerxml"`
}

// xmlSchema is what parseXML allows in one element: text only (a leaf),
// anything (xmlAny), or the child elements named.
type xmlSchema struct {
	name     string // the root's (XMLName), "" = any
	leaf     bool
	any      bool
	text     bool // ",chardata" beside the children
	children map[string]*xmlSchema
}

var schemas sync.Map // reflect.Type → *xmlSchema

// schemaOf returns the schema of the struct t (or *t) describes.
func schemaOf(t reflect.Type) *xmlSchema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s, ok := schemas.Load(t); ok {
		return s.(*xmlSchema)
	}
	s := elementSchema(t, 0)
	if f, ok := t.FieldByName("XMLName"); ok && f.Type == reflect.TypeFor[xml.Name]() {
		s.name, _, _ = strings.Cut(f.Tag.Get("xml"), ",")
	}
	schemas.Store(t, s)
	return s
}

var (
	xmlAnyType        = reflect.TypeFor[xmlAny]()
	unmarshalerTy     = reflect.TypeFor[xml.Unmarshaler]()
	textUnmarshalerTy = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// elementSchema is the schema of an element decoded into a value of type t.
func elementSchema(t reflect.Type, depth int) *xmlSchema {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8 {
		t = t.Elem()
	}
	switch {
	case t == xmlAnyType || reflect.PointerTo(t).Implements(unmarshalerTy) || depth > maxXMLDepth:
		return &xmlSchema{any: true}
	case t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(textUnmarshalerTy):
		return &xmlSchema{leaf: true}
	}
	s := &xmlSchema{children: map[string]*xmlSchema{}}
	addFields(s, t, depth)
	return s
}

// addFields adds the elements of struct t's fields to s (embedded
// structs' fields as their own, as encoding/xml does).
func addFields(s *xmlSchema, t reflect.Type, depth int) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("xml")
		if tag == "-" || f.Name == "XMLName" || !f.IsExported() && !f.Anonymous {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		switch {
		case f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct:
			addFields(s, f.Type, depth)
			continue
		case opts == "chardata":
			s.text = true
			continue
		case opts == "innerxml", opts == "any":
			s.any = true
			continue
		case opts == "attr", strings.HasPrefix(opts, "attr,"), opts == "comment":
			continue
		}
		if name == "" {
			name = f.Name
		}
		// "a>b>c": a path of elements, the last one the field's.
		path := strings.Split(name, ">")
		at := s
		for _, p := range path[:len(path)-1] {
			next := at.children[p]
			if next == nil {
				next = &xmlSchema{children: map[string]*xmlSchema{}}
				at.children[p] = next
			}
			at = next
		}
		at.children[path[len(path)-1]] = elementSchema(f.Type, depth+1)
	}
}

// checkXML reads data as tokens against root's schema (see parseXML).
func checkXML(data []byte, root *xmlSchema) error {
	dec := xml.NewDecoder(bytes.NewReader(data))
	var stack []*xmlSchema
	elements := 0
	for {
		tok, err := dec.RawToken()
		if err != nil {
			return errors.New("not well-formed XML")
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			elements++
			if elements > maxXMLElements || len(stack) >= maxXMLDepth {
				return errors.New("XML body too deep or with too many elements")
			}
			var next *xmlSchema
			switch {
			case len(stack) == 0:
				if root.name != "" && tok.Name.Local != root.name {
					return fmt.Errorf("the root element must be %s", root.name)
				}
				next = root
			case stack[len(stack)-1].any:
				next = stack[len(stack)-1]
			default:
				next = stack[len(stack)-1].children[tok.Name.Local]
			}
			if next == nil {
				return fmt.Errorf("unknown element %s", tok.Name.Local)
			}
			stack = append(stack, next)
		case xml.EndElement:
			// RawToken does not match end tags to start tags: Decode does.
			if len(stack) == 0 {
				return errors.New("not well-formed XML")
			}
			if stack = stack[:len(stack)-1]; len(stack) == 0 {
				return nil
			}
		case xml.CharData:
			if len(bytes.TrimSpace(tok)) == 0 {
				continue
			}
			if len(stack) == 0 {
				return errors.New("text outside the root element")
			}
			if top := stack[len(stack)-1]; !top.leaf && !top.any && !top.text {
				return errors.New("text where elements belong")
			}
		case xml.Directive:
			return errors.New("XML directives are not allowed")
		}
	}
}
