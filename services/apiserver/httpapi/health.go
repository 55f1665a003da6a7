package httpapi

import (
	"fmt"
	"net/http"
	"strings"
)

// Health endpoints as kube-apiserver has them: /livez (the process is
// alive and not shutting down), /readyz (it serves: watch caches loaded,
// post-start hooks done) and /healthz (the older name of both), each with
// its checks as sub-paths (/readyz/ping) and a verbose form
// (?verbose: one [+] or [-] line per check). They need no credentials, as
// probes have none (Kubernetes grants them to system:unauthenticated).

// healthChecks are the checks of each endpoint, by name.
func (h *Handler) healthChecks(endpoint string) []healthCheck {
	ping := healthCheck{"ping", func() bool { return true }}
	live := healthCheck{"shutdown", h.cfg.Live}
	ready := healthCheck{"ready", h.cfg.Ready}
	switch endpoint {
	case "livez":
		return []healthCheck{ping, live}
	default: // readyz, healthz
		return []healthCheck{ping, live, ready}
	}
}

type healthCheck struct {
	name string
	ok   func() bool
}

func isHealthPath(p string) bool {
	for _, e := range []string{"/healthz", "/livez", "/readyz"} {
		if p == e || strings.HasPrefix(p, e+"/") {
			return true
		}
	}
	return false
}

func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	endpoint, check, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	checks := h.healthChecks(endpoint)
	if check != "" {
		for _, c := range checks {
			if c.name == check {
				checks = []healthCheck{c}
				break
			}
		}
		if len(checks) != 1 || checks[0].name != check {
			http.Error(w, "404 page not found", http.StatusNotFound)
			return
		}
	}
	_, verbose := r.URL.Query()["verbose"]
	var b strings.Builder
	failed := false
	for _, c := range checks {
		if c.ok == nil || c.ok() {
			fmt.Fprintf(&b, "[+]%s ok\n", c.name)
		} else {
			failed = true
			fmt.Fprintf(&b, "[-]%s failed: reason withheld\n", c.name)
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	switch {
	case failed:
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "%s%s check failed\n", b.String(), endpoint)
	case verbose:
		fmt.Fprintf(w, "%s%s check passed\n", b.String(), endpoint)
	default:
		_, _ = w.Write([]byte("ok"))
	}
}
