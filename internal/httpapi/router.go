package httpapi

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/coffer-storage/coffer/internal/errcode"
)

// router matches request paths against the route table's patterns. It is
// hand-written rather than http.ServeMux because object keys are not
// paths: ServeMux cleans paths and redirects "a//b" to "a/b", which would
// silently address another key. Here every segment of the escaped path is
// unescaped on its own, so %2F stays inside its segment, and a trailing
// {name...} wildcard takes the rest verbatim, empty segments included.
type router struct {
	patterns []compiledPattern
}

type compiledPattern struct {
	segs   []string // literal segments, or "{name}" / "{name...}"
	routes []Route  // one per method
	allow  string
}

func newRouter(routes []Route) *router {
	rt := &router{}
	idx := map[string]int{}
	for _, r := range routes {
		i, ok := idx[r.Pattern]
		if !ok {
			i = len(rt.patterns)
			idx[r.Pattern] = i
			rt.patterns = append(rt.patterns, compiledPattern{segs: strings.Split(strings.TrimPrefix(r.Pattern, "/"), "/")})
		}
		p := &rt.patterns[i]
		p.routes = append(p.routes, r)
		if p.allow != "" {
			p.allow += ", "
		}
		p.allow += r.Method
		if r.Method == http.MethodGet {
			p.allow += ", HEAD"
		}
	}
	return rt
}

// match finds the route for r and sets its path values. It returns the
// route, or an error (NotFound, MethodNotAllowed, InvalidArgument for a
// badly escaped path).
func (rt *router) match(r *http.Request) (Route, error) {
	raw := strings.TrimPrefix(r.URL.EscapedPath(), "/")
	reqSegs := strings.Split(raw, "/")
	for _, p := range rt.patterns {
		vals, ok, err := p.bind(reqSegs)
		if err != nil {
			return Route{}, err
		}
		if !ok {
			continue
		}
		method := r.Method
		if method == http.MethodHead {
			method = http.MethodGet
		}
		for _, route := range p.routes {
			if route.Method == method {
				for k, v := range vals {
					r.SetPathValue(k, v)
				}
				return route, nil
			}
		}
		return Route{Pattern: p.routes[0].Pattern, Method: p.allow}, errcode.New(errcode.MethodNotAllowed, "method %s not allowed here", r.Method)
	}
	return Route{}, errcode.New(errcode.NotFound, "no such endpoint")
}

func (p compiledPattern) bind(req []string) (map[string]string, bool, error) {
	var vals map[string]string
	for i, seg := range p.segs {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "...}") {
			if i >= len(req) {
				return nil, false, nil
			}
			parts := make([]string, 0, len(req)-i)
			for _, s := range req[i:] {
				u, err := url.PathUnescape(s)
				if err != nil {
					return nil, false, errcode.New(errcode.InvalidArgument, "path is not validly percent-encoded")
				}
				parts = append(parts, u)
			}
			v := strings.Join(parts, "/")
			if v == "" {
				return nil, false, nil
			}
			if vals == nil {
				vals = map[string]string{}
			}
			vals[seg[1:len(seg)-4]] = v
			return vals, true, nil
		}
		if i >= len(req) {
			return nil, false, nil
		}
		if strings.HasPrefix(seg, "{") {
			u, err := url.PathUnescape(req[i])
			if err != nil {
				return nil, false, errcode.New(errcode.InvalidArgument, "path is not validly percent-encoded")
			}
			if u == "" {
				return nil, false, nil
			}
			if vals == nil {
				vals = map[string]string{}
			}
			vals[seg[1:len(seg)-1]] = u
			continue
		}
		if req[i] != seg {
			return nil, false, nil
		}
	}
	if len(req) != len(p.segs) {
		return nil, false, nil
	}
	return vals, true, nil
}
