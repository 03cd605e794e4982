package server

import (
	"net"
	"testing"
)

func TestOpenToAll(t *testing.T) {
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 8080} }
	for _, tc := range []struct {
		policy string
		addr   net.Addr
		want   bool
	}{
		{"open", tcp("127.0.0.1"), false},
		{"open", tcp("127.1.2.3"), false},
		{"open", tcp("::1"), false},
		{"open", tcp("0.0.0.0"), true},
		{"open", tcp("::"), true},
		{"open", tcp("192.0.2.10"), true},
		{"open", &net.UnixAddr{Name: "/run/coffer.sock"}, true},
		{"invite", tcp("0.0.0.0"), false},
		{"closed", tcp("192.0.2.10"), false},
	} {
		if got := openToAll(tc.policy, tc.addr); got != tc.want {
			t.Errorf("openToAll(%s, %v) = %v, want %v", tc.policy, tc.addr, got, tc.want)
		}
	}
}
