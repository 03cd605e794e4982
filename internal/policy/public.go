package policy

// fixedKeys are the condition keys whose fixed values make an Allow to
// everyone non-public, after AWS's "The meaning of public": they tie the
// grant to named accounts, networks or sources.
var fixedKeys = map[string]bool{
	"aws:sourceip": true, "aws:sourcearn": true, "aws:sourcevpc": true, "aws:sourcevpce": true,
	"aws:sourceowner": true, "aws:sourceaccount": true, "aws:sourceorgid": true, "aws:userid": true,
	"aws:principalaccount": true, "aws:principalarn": true, "aws:principalorgid": true,
	"s3:dataaccesspointarn": true, "s3:dataaccesspointaccount": true,
}

// IsPublic reports whether the policy grants access to anyone, as S3's
// GetBucketPolicyStatus and BlockPublicPolicy judge it: an Allow to the
// principal "*" (or to everyone but some, NotPrincipal) that no condition
// ties to fixed values of aws:SourceIp, aws:SourceVpc(e),
// aws:SourceArn, aws:SourceAccount, aws:SourceOwner, aws:SourceOrgID,
// aws:userid, aws:PrincipalAccount, aws:PrincipalArn, aws:PrincipalOrgID
// or s3:DataAccessPoint*. A fixed value has no wildcard and no policy
// variable; an IP range counts when it is no wider than /8 (IPv4) or /32
// (IPv6).
func (p *Policy) IsPublic() bool {
	for i := range p.stmts {
		s := &p.stmts[i]
		if s.deny || s.anyPrincipal == s.notPrincipal { // not everyone
			continue
		}
		restricted := false
		for j := range s.conds {
			if s.conds[j].fixes() {
				restricted = true
				break
			}
		}
		if !restricted {
			return true
		}
	}
	return false
}

// fixes reports whether the condition holds only for fixed values of a
// key that names who or where.
func (c *condition) fixes() bool {
	if !fixedKeys[c.key] || c.neg || c.ifExists || c.set == setAll {
		return false
	}
	switch c.fam {
	case famString:
		for i := range c.globs {
			if _, ok := c.globs[i].literal(); !ok {
				return false
			}
		}
		return len(c.globs) > 0
	case famARN:
		for i := range c.arns {
			for j := range c.arns[i] {
				if _, ok := c.arns[i][j].literal(); !ok {
					return false
				}
			}
		}
		return len(c.arns) > 0
	case famIP:
		for _, n := range c.nets {
			if n.Addr().Is4() && n.Bits() < 8 || !n.Addr().Is4() && n.Bits() < 32 {
				return false
			}
		}
		return len(c.nets) > 0
	}
	return false
}
