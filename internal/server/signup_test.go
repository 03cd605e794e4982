package server

import (
	"net"
	"testing"
	"time"

	"github.com/coffer-storage/coffer/internal/config"
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

func TestSignupLimit(t *testing.T) {
	if got, want := signupLimit(config.Rate{}), -1; got != want {
		t.Errorf("signupLimit(0) = %d, want %d (unlimited)", got, want)
	}
	if got, want := signupLimit(config.Rate{N: 5, Per: time.Hour}), 5; got != want {
		t.Errorf("signupLimit(5/h) = %d, want %d", got, want)
	}
}
