package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"skiff.dev/internal/client"
	"skiff.dev/internal/csr"
	certificatesv1 "skiff.dev/proto/certificates/v1"
)

// certificateCmd is kubectl certificate: approve and deny
// CertificateSigningRequests through their approval subresource (which
// needs the approve verb on the request's signer).
func (r *root) certificateCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "certificate SUBCOMMAND",
		Short: "Modify certificate resources",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError(cmd, "USAGE: certificate approve|deny CSR... [flags]")
		},
	}
	c.AddCommand(r.certificateDecisionCmd(csr.Approved), r.certificateDecisionCmd(csr.Denied))
	return c
}

// certificateDecisionCmd is certificate approve (cond Approved) or deny
// (Denied): kubectl's reasons and messages.
func (r *root) certificateDecisionCmd(cond string) *cobra.Command {
	name, done, reason := "approve", "approved", "KubectlApprove"
	short := "Approve a certificate signing request"
	if cond == csr.Denied {
		name, done, reason = "deny", "denied", "KubectlDeny"
		short = "Deny a certificate signing request"
	}
	var force bool
	c := &cobra.Command{
		Use:     name + " CSR...",
		Short:   short,
		Example: fmt.Sprintf("  skiffctl certificate %s csr-sqgzp", name),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError(cmd, "USAGE: certificate %s CSR... [flags]", name)
			}
			conn, err := r.connect()
			if err != nil {
				return err
			}
			for _, n := range args {
				if err := decide(cmd.Context(), conn, n, cond, reason, fmt.Sprintf("This CSR was %s by kubectl certificate %s.", done, name), force); err != nil {
					return err
				}
				fmt.Fprintf(r.env.Out, "certificatesigningrequest.certificates.k8s.io/%s %s\n", n, done)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&force, "force", false, "update the CSR even if it is already "+done)
	return c
}

// decide adds condition cond to CSR name unless it has it already (or
// force), retrying on conflicts; the opposite decision is an error, as
// kubectl's.
func decide(ctx context.Context, conn grpc.ClientConnInterface, name, cond, reason, message string, force bool) error {
	csrs := client.CertificateSigningRequests(conn)
	rpc := certificatesv1.NewCertificateSigningRequestsClient(conn)
	opposite := csr.Denied
	if cond == csr.Denied {
		opposite = csr.Approved
	}
	return client.RetryOnConflict(ctx, client.DefaultRetry, func() error {
		c, err := csrs.Get(ctx, "", name)
		if err != nil {
			return err
		}
		if csr.Condition(c, opposite) != nil {
			return fmt.Errorf("certificatesigningrequest %q is already %s", name, map[string]string{csr.Approved: "approved", csr.Denied: "denied"}[opposite])
		}
		if csr.Condition(c, cond) != nil && !force {
			return nil
		}
		if c.Status == nil {
			c.Status = &certificatesv1.CertificateSigningRequestStatus{}
		}
		kept := c.Status.Conditions[:0]
		for _, x := range c.Status.Conditions {
			if x.GetType() != cond {
				kept = append(kept, x)
			}
		}
		c.Status.Conditions = append(kept, &certificatesv1.CertificateSigningRequestCondition{Type: cond, Status: csr.True, Reason: reason, Message: message})
		_, err = rpc.UpdateApproval(ctx, c)
		return err
	})
}
