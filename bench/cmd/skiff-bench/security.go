package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/client"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	rbacv1 "skiff.dev/proto/rbac/v1"
	"skiff.dev/services/apiserver/admission"
	"skiff.dev/services/apiserver/apiserver"
	"skiff.dev/services/apiserver/apiservertest"
)

// securityDefaults sets cfg's security to what skiff-apiserver runs with
// when no flag says otherwise: the options' own flag defaults, parsed from
// an empty command line, so the benchmark follows the command.
func securityDefaults(cfg *apiserver.Config) error {
	fs := flag.NewFlagSet("skiff-apiserver defaults", flag.ContinueOnError)
	cfg.Authn.AddFlags(fs)
	cfg.Authz.AddFlags(fs)
	cfg.Admission.AddFlags(fs)
	cfg.FlowControl.AddFlags(fs)
	cfg.Audit.AddFlags(fs)
	if err := fs.Parse(nil); err != nil {
		return err
	}
	// No serviceaccounts controller makes the namespaces' "default"
	// accounts here: the ServiceAccount plugin would refuse every pod.
	cfg.Admission.DisablePlugins = append(cfg.Admission.DisablePlugins, admission.ServiceAccountName)
	return nil
}

const (
	benchUserName = "skiff-bench"
	benchBinding  = "ClusterRoleBinding skiff-bench -> ClusterRole cluster-admin"
)

// benchNamespaces are the namespaces the scenarios write in: with the
// NamespaceLifecycle admission plugin they must exist.
var benchNamespaces = []string{"create-bench", "get-bench", "list-bench", "watch-bench", "scheduler-bench", "node-bench", "controllers-bench"}

// benchUser makes the benchmark's identity: a client certificate for user
// skiff-bench, not in system:masters, granted cluster-admin by a
// ClusterRoleBinding, so every request is authorized by RBAC rule
// evaluation. It creates the scenarios' namespaces as that user, which also
// waits until the authorizer has seen the binding.
func benchUser(ctx context.Context, srv *apiservertest.Server) (*client.Config, error) {
	_, err := client.ClusterRoleBindings(srv.Conn).Create(ctx, &rbacv1.ClusterRoleBinding{
		Metadata: &metav1.ObjectMeta{Name: benchUserName},
		Subjects: []*rbacv1.Subject{{Kind: "User", Name: benchUserName}},
		RoleRef:  &rbacv1.RoleRef{Kind: "ClusterRole", Name: "cluster-admin"},
	})
	if err != nil {
		return nil, fmt.Errorf("binding the benchmark's user to cluster-admin: %w", err)
	}
	cfg, err := srv.Security.Config(benchUserName)
	if err != nil {
		return nil, err
	}
	conn, err := client.Dial(cfg)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	namespaces := client.Namespaces(conn)
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for _, name := range benchNamespaces {
		for {
			_, err := namespaces.Create(ctx, &corev1.Namespace{Metadata: &metav1.ObjectMeta{Name: name}})
			if err == nil || apierrors.IsAlreadyExists(err) {
				break
			}
			// Forbidden until the RBAC informers have the new binding.
			if !apierrors.IsForbidden(err) || time.Now().After(deadline) {
				return nil, fmt.Errorf("creating namespace %s as %s: %w", name, benchUserName, err)
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-tick.C:
			}
		}
	}
	return &cfg, nil
}
