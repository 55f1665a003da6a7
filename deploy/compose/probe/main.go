// Command skiff-probe is the healthcheck of the compose cluster's images,
// which are FROM scratch and have no curl: it GETs each URL and exits 0
// when every one answers 2xx within the timeout, else 1 with the reason on
// stderr. With -body it also copies each answer's body to stdout (the
// compose e2e reads /metrics with it for promtool check metrics).
//
//	skiff-probe [-timeout 3s] [-body] http://127.0.0.1:10257/readyz [URL...]
//
// It is a module of its own (standard library only, built with
// GOWORK=off) so that the deploy directory needs nothing of the
// workspace.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	fs := flag.NewFlagSet("skiff-probe", flag.ContinueOnError)
	timeout := fs.Duration("timeout", 3*time.Second, "time allowed for all the URLs")
	body := fs.Bool("body", false, "copy each answer's body to stdout")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: skiff-probe [-timeout 3s] [-body] URL...")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	failed := false
	for _, u := range fs.Args() {
		var out io.Writer = io.Discard
		if *body {
			out = os.Stdout
		}
		if err := get(ctx, u, out); err != nil {
			fmt.Fprintln(os.Stderr, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

func get(ctx context.Context, url string, out io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("%s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	return nil
}
