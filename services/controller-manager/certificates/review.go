package certificates

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"skiff.dev/internal/client"
)

// Access is the question of a SubjectAccessReview: may the user do verb
// on group's resource/subresource?
type Access struct {
	User                               string
	UID                                string
	Groups                             []string
	Verb, Group, Resource, Subresource string
}

// Reviewer answers access questions (the apiserver's SubjectAccessReview).
type Reviewer interface {
	Allowed(ctx context.Context, a Access) (bool, error)
}

// HTTPReviewer creates SubjectAccessReviews through the apiserver's HTTP
// API (the gRPC API has no such service), as Kubernetes' approver does,
// with the controller-manager's own credentials: it may create
// subjectaccessreviews.
type HTTPReviewer struct {
	cfg    client.Config
	client *http.Client
	token  string
}

// NewHTTPReviewer is a reviewer for the apiserver(s) of cfg.
func NewHTTPReviewer(cfg client.Config) (*HTTPReviewer, error) {
	r := &HTTPReviewer{cfg: cfg, token: cfg.Token}
	tr := &http.Transport{ForceAttemptHTTP2: true}
	if !cfg.Insecure {
		tc, err := cfg.TLSConfig()
		if err != nil {
			return nil, err
		}
		tc.NextProtos = []string{"h2", "http/1.1"} // the HTTP API, not the native gRPC server
		tr.TLSClientConfig = tc
	}
	if r.token == "" && cfg.TokenFile != "" {
		b, err := readToken(cfg.TokenFile)
		if err != nil {
			return nil, err
		}
		r.token = b
	}
	r.client = &http.Client{Transport: tr, Timeout: 30 * time.Second}
	return r, nil
}

// sarRequest and sarStatus are the parts of authorization.k8s.io/v1's
// SubjectAccessReview the approver sends and reads.
type sarRequest struct {
	APIVersion string  `json:"apiVersion"`
	Kind       string  `json:"kind"`
	Spec       sarSpec `json:"spec"`
}

type sarSpec struct {
	User               string        `json:"user,omitempty"`
	UID                string        `json:"uid,omitempty"`
	Groups             []string      `json:"groups,omitempty"`
	ResourceAttributes sarAttributes `json:"resourceAttributes"`
}

type sarAttributes struct {
	Verb        string `json:"verb"`
	Group       string `json:"group"`
	Version     string `json:"version"`
	Resource    string `json:"resource"`
	Subresource string `json:"subresource,omitempty"`
}

type sarResponse struct {
	Status struct {
		Allowed bool `json:"allowed"`
	} `json:"status"`
}

// Allowed implements Reviewer: one apiserver after another (the members
// of --server) until one answers.
func (r *HTTPReviewer) Allowed(ctx context.Context, a Access) (bool, error) {
	body, err := json.Marshal(sarRequest{APIVersion: "authorization.k8s.io/v1", Kind: "SubjectAccessReview", Spec: sarSpec{
		User: a.User, UID: a.UID, Groups: a.Groups,
		ResourceAttributes: sarAttributes{Verb: a.Verb, Group: a.Group, Version: "*", Resource: a.Resource, Subresource: a.Subresource},
	}})
	if err != nil {
		return false, err
	}
	scheme := "https://"
	if r.cfg.Insecure {
		scheme = "http://"
	}
	var errs []error
	for _, member := range client.Members(r.cfg.Server) {
		allowed, err := r.post(ctx, scheme+member+"/apis/authorization.k8s.io/v1/subjectaccessreviews", body)
		if err == nil {
			return allowed, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return false, fmt.Errorf("subjectaccessreview: %w", errors.Join(errs...))
}

func (r *HTTPReviewer) post(ctx context.Context, url string, body []byte) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return false, err
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("%s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	var out sarResponse
	if err := json.Unmarshal(b, &out); err != nil {
		return false, fmt.Errorf("%s: %w", url, err)
	}
	return out.Status.Allowed, nil
}

func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("--token-file %s: empty", path)
	}
	return t, nil
}
