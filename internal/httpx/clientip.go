package httpx

import (
	"net/http"
	"net/netip"
	"strings"
)

// ClientIP returns the client's address: the TCP peer, unless the peer is a
// trusted proxy, in which case the right-most address in X-Forwarded-For
// that is not itself a trusted proxy.
func ClientIP(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer, _ := netip.ParseAddrPort(r.RemoteAddr)
	addr := peer.Addr().Unmap()
	if !isTrusted(addr, trusted) {
		return addr
	}
	addr, _ = forwarded(r, addr, trusted)
	return addr
}

// ForwardedClient returns the client a trusted proxy names in
// X-Forwarded-For (as ClientIP takes it), with ok false when the peer is
// not a trusted proxy, names no one, or sends a hop that does not parse.
func ForwardedClient(r *http.Request, trusted []netip.Prefix) (netip.Addr, bool) {
	peer, _ := netip.ParseAddrPort(r.RemoteAddr)
	addr := peer.Addr().Unmap()
	if !isTrusted(addr, trusted) {
		return netip.Addr{}, false
	}
	return forwarded(r, addr, trusted)
}

// forwarded walks the X-Forwarded-For hops of a request from the trusted
// proxy peer, right to left, to the first one that is not a trusted proxy
// (or the left-most). ok is false if there is no hop or one does not
// parse; addr is then the last address that did (peer, or a trusted hop).
func forwarded(r *http.Request, peer netip.Addr, trusted []netip.Prefix) (addr netip.Addr, ok bool) {
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	addr = peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return addr, false
		}
		a = a.Unmap()
		if !isTrusted(a, trusted) {
			return a, true
		}
		addr = a
	}
	return addr, len(hops) > 0
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
