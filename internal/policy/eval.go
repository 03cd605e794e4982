package policy

var _ Evaluator = (*Policy)(nil)

// Evaluate answers one request: Deny when a Deny statement applies, else
// Allow when an Allow statement applies, else NoMatch. Actions and
// condition keys compare case-insensitively, resources case-sensitively.
// It allocates nothing for an action spelled as S3 spells it.
func (p *Policy) Evaluate(r *Request) Decision {
	ai := lookupAction(r.Action)
	allowed := false
	for i := range p.stmts {
		s := &p.stmts[i]
		if allowed && !s.deny {
			continue // only a Deny can change the answer now
		}
		if !s.applies(r, ai) {
			continue
		}
		if s.deny {
			return Deny
		}
		allowed = true
	}
	if allowed {
		return Allow
	}
	return NoMatch
}

func (s *statement) applies(r *Request, ai int) bool {
	return s.matchAction(r.Action, ai) && s.matchPrincipal(&r.Principal) &&
		s.matchResource(r.Resource, r.Context) && s.matchConditions(r.Context)
}

func (s *statement) matchAction(action string, ai int) bool {
	var m bool
	if ai >= 0 {
		m = s.actions.has(ai)
	} else {
		for i := range s.actionPat {
			if s.actionPat[i].match(action, nil) {
				m = true
				break
			}
		}
	}
	return m != s.notAction
}

func (s *statement) matchPrincipal(p *Principal) bool {
	m := s.anyPrincipal
	for i := 0; !m && i < len(s.principals); i++ {
		m = s.principals[i].matches(p)
	}
	return m != s.notPrincipal
}

func (s *statement) matchResource(res string, ctx map[string][]string) bool {
	m := s.anyResource
	for i := 0; !m && i < len(s.resources); i++ {
		m = s.resources[i].match(res, ctx)
	}
	return m != s.notResource
}

func (s *statement) matchConditions(ctx map[string][]string) bool {
	for i := range s.conds {
		if !s.conds[i].holds(ctx) {
			return false
		}
	}
	return true
}

func (d Decision) String() string {
	switch d {
	case Allow:
		return "Allow"
	case Deny:
		return "Deny"
	}
	return "NoMatch"
}
