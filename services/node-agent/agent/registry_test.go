package agent

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"skiff.dev/services/node-agent/imagebuild"
)

// authRegistry is a minimal OCI distribution registry on loopback that
// asks for HTTP basic auth on every request (as a private registry does),
// serving images read from docker-archive tarballs (imagebuild's).
type authRegistry struct {
	addr       string
	user, pass string
	manifests  map[string][]byte // "<name>:<tag>" -> OCI manifest
	blobs      map[string][]byte // digest -> content
	refused    atomic.Int64      // requests answered 401
}

const ociManifestType = "application/vnd.oci.image.manifest.v1+json"

// startAuthRegistry serves images (name:tag -> docker-archive path) with
// the given credentials, until the test ends.
func startAuthRegistry(t *testing.T, user, pass string, images map[string]string) *authRegistry {
	t.Helper()
	r := &authRegistry{user: user, pass: pass, manifests: map[string][]byte{}, blobs: map[string][]byte{}}
	for ref, archive := range images {
		if err := r.add(ref, archive); err != nil {
			t.Fatalf("registry image %s: %v", ref, err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = l.Addr().String()
	srv := &http.Server{Handler: r}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return r
}

func sha256Digest(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// add reads a docker-archive and stores its config, layers and an OCI
// manifest of them.
func (r *authRegistry) add(ref, archive string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		files[filepath.Clean(h.Name)] = b
	}
	var ms []imagebuild.Manifest
	if err := json.Unmarshal(files["manifest.json"], &ms); err != nil || len(ms) != 1 {
		return errors.New("manifest.json: want one image")
	}
	type desc struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
		Size      int    `json:"size"`
	}
	blob := func(name, mediaType string) desc {
		b := files[filepath.Clean(name)]
		d := sha256Digest(b)
		r.blobs[d] = b
		return desc{MediaType: mediaType, Digest: d, Size: len(b)}
	}
	m := struct {
		SchemaVersion int    `json:"schemaVersion"`
		MediaType     string `json:"mediaType"`
		Config        desc   `json:"config"`
		Layers        []desc `json:"layers"`
	}{SchemaVersion: 2, MediaType: ociManifestType, Config: blob(ms[0].Config, "application/vnd.oci.image.config.v1+json")}
	for _, l := range ms[0].Layers {
		m.Layers = append(m.Layers, blob(l, "application/vnd.oci.image.layer.v1.tar"))
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	r.manifests[ref] = b
	r.blobs[sha256Digest(b)] = b
	return nil
}

func (r *authRegistry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if u, p, ok := req.BasicAuth(); !ok || u != r.user || p != r.pass {
		r.refused.Add(1)
		w.Header().Set("WWW-Authenticate", `Basic realm="skiff-test-registry"`)
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
		return
	}
	path := strings.TrimPrefix(req.URL.Path, "/v2/")
	if path == "" {
		w.WriteHeader(http.StatusOK)
		return
	}
	var body []byte
	var ok bool
	if i := strings.LastIndex(path, "/manifests/"); i >= 0 {
		name, ref := path[:i], path[i+len("/manifests/"):]
		if strings.HasPrefix(ref, "sha256:") {
			body, ok = r.blobs[ref]
		} else {
			body, ok = r.manifests[name+":"+ref]
		}
		w.Header().Set("Content-Type", ociManifestType)
	} else if i := strings.LastIndex(path, "/blobs/"); i >= 0 {
		body, ok = r.blobs[path[i+len("/blobs/"):]]
		w.Header().Set("Content-Type", "application/octet-stream")
	}
	if !ok {
		http.Error(w, `{"errors":[{"code":"NOT_FOUND"}]}`, http.StatusNotFound)
		return
	}
	w.Header().Set("Docker-Content-Digest", sha256Digest(body))
	w.Header().Set("Content-Length", itoa(len(body)))
	if req.Method == http.MethodHead {
		return
	}
	w.Write(body)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
