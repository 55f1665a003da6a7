package apiserver

import (
	"net/url"
	"testing"
)

// TestPeerListenURL: etcd binds IPs only, so a peer URL naming a host
// (apiserver2 in compose, a DNS name on real machines) listens on every
// interface, on its port and scheme.
func TestPeerListenURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://10.0.0.7:2380":   "https://10.0.0.7:2380",
		"https://[fd00::7]:2380":  "https://[fd00::7]:2380",
		"https://apiserver2:2380": "https://0.0.0.0:2380",
		"http://cp1.example:2381": "http://0.0.0.0:2381",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := peerListenURL(*u); got.String() != want {
			t.Errorf("%s: listens on %s, want %s", in, got.String(), want)
		}
	}
}
