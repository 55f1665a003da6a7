package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestInCluster runs examples/in-cluster as the pod its manifest makes:
// with only the identity the cluster mounts into it (a bound
// service-account token, the CA, the namespace) and KUBERNETES_SERVICE_*,
// it is refused by RBAC, then lists the pods of its namespace once the
// example's Role and RoleBinding are applied.
func TestInCluster(t *testing.T) {
	c := newCluster(t)
	dir := filepath.Join("..", "..", "..", "examples", "in-cluster")
	c.ctl("apply", "-f", filepath.Join(dir, "in-cluster.yaml"))
	t.Cleanup(func() { _, _ = c.tryCtl("delete", "namespace", "in-cluster", "--wait=false") })
	logs := func(want string) func() error {
		return func() error {
			out, err := c.tryCtl("logs", "-n", "in-cluster", "lister")
			if err != nil {
				return err
			}
			if !strings.Contains(string(out), want) {
				return fmt.Errorf("no %q in the log:\n%s", want, out)
			}
			return nil
		}
	}
	c.eventually("the lister refused by RBAC", 3*time.Minute,
		logs(`cannot list resource "pods" in API group "" in the namespace "in-cluster"`))
	c.ctl("apply", "-f", filepath.Join(dir, "rbac.yaml"))
	c.eventually("the lister listing its namespace's pods", time.Minute, logs("1 pods in namespace in-cluster: lister (Running)"))
}
