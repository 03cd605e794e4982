// Package policy is the IAM policy language of bucket policies and of
// scoped keys: a parser that validates once, when a policy is written, and
// an evaluator that answers one request at a time (AWS's rules: an
// explicit Deny wins, then an Allow, else no match).
package policy

// Decision is a policy's verdict on one request.
type Decision int

// The decisions.
const (
	NoMatch Decision = iota // no statement applies
	Allow                   // an Allow statement applies and no Deny does
	Deny                    // an explicit Deny applies
)

// Principal is who makes a request, as policies name them.
type Principal struct {
	// Anonymous: no credentials; matches only Principal "*" ({"AWS": "*"}).
	Anonymous bool
	// UserID is the account's user ID, which is also its canonical user
	// ID; KeyID the access key the request was signed with, if any.
	UserID, KeyID string
}

// Request is what a policy is asked about.
type Request struct {
	Principal Principal
	// Action is S3's action name, e.g. "s3:GetObject".
	Action string
	// Resource is the ARN: "arn:aws:s3:::BUCKET" or "arn:aws:s3:::BUCKET/KEY".
	Resource string
	// Context holds the condition keys' values under lower-case names
	// ("aws:sourceip", "s3:prefix", "s3:existingobjecttag/color").
	Context map[string][]string
}

// Evaluator is a parsed policy.
type Evaluator interface {
	Evaluate(r *Request) Decision
}
