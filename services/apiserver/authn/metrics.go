package authn

import (
	"github.com/prometheus/client_golang/prometheus"

	"skiff.dev/internal/promutil"
)

// newCertExpiration is Kubernetes' apiserver_client_certificate_expiration_seconds
// (k8s.io/apiserver's x509 authenticator), with its buckets: the remaining
// lifetime of the client certificate of each request, for
// kubernetes-mixin's KubeClientCertificateExpiration alert
// (histogram_quantile(0.01, ...) under 7 days, or 1 day). Registered on reg
// unless nil.
func newCertExpiration(reg prometheus.Registerer) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "apiserver_client_certificate_expiration_seconds",
		Help: "Distribution of the remaining lifetime on the certificate used to authenticate a request.",
		Buckets: []float64{
			0,
			1800,     // 30 minutes
			3600,     // 1 hour
			7200,     // 2 hours
			21600,    // 6 hours
			43200,    // 12 hours
			86400,    // 1 day
			172800,   // 2 days
			345600,   // 4 days
			604800,   // 1 week
			2592000,  // 1 month
			7776000,  // 3 months
			15552000, // 6 months
			31104000, // 1 year
		},
	})
	return promutil.MustRegister(reg, h)
}
