package authn

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"skiff.dev/services/apiserver/user"
)

// StaticTokens are the bearer tokens of a token file, as Kubernetes'
// --token-auth-file: CSV lines `token,user,uid,"group1,group2"` (the
// groups column is optional; lines starting with # are comments).
type StaticTokens map[string]*user.Info

// ReadTokenFile reads a static token file.
func ReadTokenFile(path string) (StaticTokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--token-auth-file: %w", err)
	}
	defer f.Close()
	tokens, err := ParseTokens(f)
	if err != nil {
		return nil, fmt.Errorf("--token-auth-file %s: %w", path, err)
	}
	return tokens, nil
}

// ParseTokens reads the CSV of a static token file.
func ParseTokens(r io.Reader) (StaticTokens, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.Comment = '#'
	cr.TrimLeadingSpace = true
	out := StaticTokens{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		if len(rec) < 3 {
			return nil, fmt.Errorf("line %d: want token,user,uid[,\"group1,group2\"], got %d fields", line, len(rec))
		}
		tok, name, uid := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1]), strings.TrimSpace(rec[2])
		switch {
		case tok == "":
			return nil, fmt.Errorf("line %d: empty token", line)
		case name == "":
			return nil, fmt.Errorf("line %d: empty user name", line)
		case out[tok] != nil:
			return nil, fmt.Errorf("line %d: the token of user %q is already the token of user %q", line, name, out[tok].Name)
		}
		var groups []string
		if len(rec) > 3 {
			for _, g := range strings.Split(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					groups = append(groups, g)
				}
			}
		}
		out[tok] = &user.Info{Name: name, UID: uid, Groups: withAuthenticated(groups), Authenticator: "token"}
	}
}
