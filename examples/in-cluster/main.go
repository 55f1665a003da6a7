// Command in-cluster lists the pods of its own namespace through the Skiff
// API, as the pod's service account: the identity the ServiceAccount
// admission plugin mounts in every container
// (/var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt,namespace})
// and the kubernetes Service's address the node agent puts in the
// environment (KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT). It
// prints the pods, or the apiserver's refusal when RBAC does not let the
// account list them (see README.md and rbac.yaml), every --interval.
//
// The token is read again for every round: the node agent renews it
// before it expires.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/status"

	"skiff.dev/internal/client"
	metav1 "skiff.dev/proto/meta/v1"
)

// DefaultDir is where the ServiceAccount admission plugin mounts the
// pod's identity.
const DefaultDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// Identity is what a pod knows of itself and of the apiserver.
type Identity struct {
	Server    string // host:port
	Namespace string
	CAFile    string
	TokenFile string
}

// InCluster reads the identity from dir and the environment.
func InCluster(dir string, getenv func(string) string) (Identity, error) {
	host, port := getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return Identity{}, errors.New("not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set")
	}
	ns, err := os.ReadFile(filepath.Join(dir, "namespace"))
	if err != nil {
		return Identity{}, fmt.Errorf("the pod's namespace: %w (is the service-account token mounted? automountServiceAccountToken false?)", err)
	}
	return Identity{
		Server:    net.JoinHostPort(host, port),
		Namespace: strings.TrimSpace(string(ns)),
		CAFile:    filepath.Join(dir, "ca.crt"),
		TokenFile: filepath.Join(dir, "token"),
	}, nil
}

// ListOnce lists the pods of id's namespace and prints them, or prints the
// refusal (and returns it).
func ListOnce(ctx context.Context, id Identity, out io.Writer) error {
	conn, err := client.Dial(client.Config{Server: id.Server, CAFile: id.CAFile, TokenFile: id.TokenFile})
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := client.Pods(conn).List(ctx, &metav1.ListOptions{Namespace: id.Namespace})
	if err != nil {
		st := status.Convert(err)
		fmt.Fprintf(out, "refused (%s): %s\n", st.Code(), st.Message())
		return err
	}
	var names []string
	for _, p := range list.GetItems() {
		names = append(names, p.GetMetadata().GetName()+" ("+p.GetStatus().GetPhase()+")")
	}
	fmt.Fprintf(out, "%d pods in namespace %s: %s\n", len(names), id.Namespace, strings.Join(names, ", "))
	return nil
}

func main() {
	dir := flag.String("dir", DefaultDir, "the mounted service-account directory (token, ca.crt, namespace)")
	interval := flag.Duration("interval", 10*time.Second, "time between two lists (0: list once and exit)")
	flag.Parse()
	id, err := InCluster(*dir, os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "in-cluster:", err)
		os.Exit(1)
	}
	fmt.Printf("in-cluster: apiserver %s, namespace %s\n", id.Server, id.Namespace)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for {
		err := ListOnce(ctx, id, os.Stdout)
		if *interval == 0 {
			if err != nil {
				os.Exit(1)
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(*interval):
		}
	}
}
