// Package authn authenticates requests: TLS client certificates (CN = user, O = groups), bearer tokens from a static token file, and service-account tokens signed by the apiserver's key; it also owns the apiserver's TLS material (the CA and certificates it creates in its data dir).
//
// The flow, one file per stage:
//
//	options.go        the flags; the zero Options are off (plain text, no authentication)
//	material.go       the TLS material: given files, or a CA and certificates made in <data-dir>/pki
//	x509.go           the client certificate the TLS handshake verified: CN = user, O = groups
//	tokenfile.go      static bearer tokens (CSV: token,user,uid,"group1,group2")
//	serviceaccount.go service-account tokens (JWT, ES256) signed by the apiserver's key
//	authenticator.go  the chain: certificate, then bearer token, then anonymous (when enabled)
//
// It does not decide what a user may do (package authz) and does not dial
// anything: the apiserver wires the ServiceAccount lookup (an informer on
// its loopback connection) in apiserver/wire_authn.go.
package authn

import (
	"flag"
	"strconv"
	"strings"
	"time"
)

// Options are the authn flags of skiff-apiserver. The zero value is off:
// plain-text gRPC and no authentication (in-process tests). AddFlags turns
// Enabled on; the command's --insecure turns it off.
type Options struct {
	// Enabled serves TLS and authenticates every request.
	Enabled bool
	// PKIDir holds the CA and certificates the apiserver makes ("": <data-dir>/pki).
	PKIDir string
	// TLSCertFile and TLSKeyFile are the serving certificate; empty: one
	// issued by the CA in PKIDir.
	TLSCertFile, TLSKeyFile string
	// ClientCAFile verifies client certificates; empty: the CA in PKIDir.
	ClientCAFile string
	// TLSSANs are extra names (DNS or IP) of the serving certificate the
	// apiserver issues itself, besides localhost, 127.0.0.1, ::1 and the hostname.
	TLSSANs []string
	// TokenAuthFile is the static token file ("" for none).
	TokenAuthFile string
	// ServiceAccountKeyFile signs and verifies service-account tokens
	// ("": PKIDir/sa.key, made on first start).
	ServiceAccountKeyFile string
	// ServiceAccountIssuer is the tokens' iss claim.
	ServiceAccountIssuer string
	// APIAudiences are the apiserver's audiences: bound tokens must name
	// one, and ServiceAccounts.CreateToken's default (empty: the issuer).
	APIAudiences []string
	// ServiceAccountMaxTokenExpiration caps the lifetime of the tokens
	// ServiceAccounts.CreateToken issues (0: no cap).
	ServiceAccountMaxTokenExpiration time.Duration
	// AnonymousAuth lets requests without credentials through as
	// system:anonymous (group system:unauthenticated).
	AnonymousAuth bool
	// NodeAgentClientCertFile and NodeAgentClientKeyFile are the client
	// certificate the apiserver shows node agents (Pods.Logs); empty: one
	// it issues itself from the CA in PKIDir (user system:apiserver, group
	// system:masters).
	NodeAgentClientCertFile, NodeAgentClientKeyFile string
	// NodeAgentCAFile verifies node agents' serving certificates ("": the client CA).
	NodeAgentCAFile string
}

// DefaultIssuer is the iss claim of service-account tokens.
const DefaultIssuer = "skiff"

// AddFlags registers the options' flags on fs and turns security on (the
// command's default); --insecure turns it off.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	o.Enabled = true
	fs.Var(insecureFlag{&o.Enabled}, "insecure", "DEVELOPMENT ONLY: serve plain-text gRPC without authentication (every request acts as system:unsecured, a member of system:masters)")
	fs.StringVar(&o.PKIDir, "pki-dir", "", "directory of the cluster CA, the certificates and the service-account key the apiserver makes on first start (default <data-dir>/pki)")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", "", "serving certificate (PEM); default: one issued by the CA in --pki-dir")
	fs.StringVar(&o.TLSKeyFile, "tls-key-file", "", "private key of --tls-cert-file")
	fs.StringVar(&o.ClientCAFile, "client-ca-file", "", "CA bundle (PEM) that verifies client certificates (CN = user, O = groups); default: the CA in --pki-dir")
	fs.Var(listFlag{&o.TLSSANs}, "tls-san", "extra DNS name or IP of the serving certificate the apiserver issues (repeat or comma-separate), e.g. apiserver")
	fs.StringVar(&o.TokenAuthFile, "token-auth-file", "", `static bearer tokens, CSV lines: token,user,uid,"group1,group2"`)
	fs.StringVar(&o.ServiceAccountKeyFile, "service-account-key-file", "", "private key (PEM, ECDSA P-256) that signs and verifies service-account tokens (default <pki-dir>/sa.key, made on first start)")
	fs.StringVar(&o.ServiceAccountIssuer, "service-account-issuer", DefaultIssuer, "iss claim of service-account tokens")
	fs.Var(listFlag{&o.APIAudiences}, "api-audiences", "audiences of the API (repeat or comma-separate): a bound service-account token must name one; the default audience of ServiceAccounts.CreateToken (default: --service-account-issuer)")
	fs.DurationVar(&o.ServiceAccountMaxTokenExpiration, "service-account-max-token-expiration", 0, "the longest lifetime of a token ServiceAccounts.CreateToken issues (longer requests get this; 0: no cap)")
	fs.BoolVar(&o.AnonymousAuth, "anonymous-auth", false, "let requests without credentials through as user system:anonymous, group system:unauthenticated")
	fs.StringVar(&o.NodeAgentClientCertFile, "node-agent-client-cert-file", "", "client certificate shown to node agents when proxying Pods.Logs (default: one issued by the CA in --pki-dir for system:apiserver)")
	fs.StringVar(&o.NodeAgentClientKeyFile, "node-agent-client-key-file", "", "private key of --node-agent-client-cert-file")
	fs.StringVar(&o.NodeAgentCAFile, "node-agent-ca-file", "", "CA bundle that verifies node agents' serving certificates (default: --client-ca-file, else the CA in --pki-dir)")
}

// insecureFlag is --insecure: a boolean flag that clears Enabled.
type insecureFlag struct{ enabled *bool }

func (f insecureFlag) String() string {
	if f.enabled == nil {
		return "false"
	}
	return strconv.FormatBool(!*f.enabled)
}

func (f insecureFlag) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*f.enabled = !v
	return nil
}

func (insecureFlag) IsBoolFlag() bool { return true }

// listFlag is a repeatable, comma-separated list.
type listFlag struct{ list *[]string }

func (f listFlag) String() string {
	if f.list == nil {
		return ""
	}
	return strings.Join(*f.list, ",")
}

func (f listFlag) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*f.list = append(*f.list, v)
		}
	}
	return nil
}

// servingCertMinLeft: a serving certificate the apiserver issued itself is
// issued again at start when it expires within this time.
const servingCertMinLeft = 30 * 24 * time.Hour
