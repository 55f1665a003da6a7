package cmd

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/manifest"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// tokenOptions are create token's flags.
type tokenOptions struct {
	audiences                           []string
	duration                            time.Duration
	boundKind, boundName, boundUID, out string
}

// boundObjectAPIVersions are the kinds a token may be bound to, as
// kubectl's --bound-object-kind takes them.
var boundObjectAPIVersions = map[string]string{"Pod": "v1", "Secret": "v1"}

func (r *root) createTokenCmd() *cobra.Command {
	var o tokenOptions
	c := &cobra.Command{
		Use:   "token SERVICE_ACCOUNT_NAME",
		Short: "Request a service account token",
		Long: `Request a token of a service account (the serviceaccounts/token
subresource, ServiceAccounts.CreateToken) and print it. The token is
signed by the apiserver, expires (--duration, else the server's default)
and may be bound to a Pod or Secret: it is invalid once that object is
gone.`,
		Example: `  skiffctl create token myapp
  skiffctl create token myapp --duration 10m --audience https://example.com
  skiffctl create token myapp --bound-object-kind Pod --bound-object-name web-0`,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := nameArg(cmd, args)
			if err != nil {
				return err
			}
			ns, err := r.namespace()
			if err != nil {
				return err
			}
			req, err := o.request(ns, name)
			if err != nil {
				return err
			}
			if o.out != "" && o.out != "yaml" && o.out != "json" && o.out != "name" {
				return fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: json,name,yaml", o.out)
			}
			conn, err := r.connect()
			if err != nil {
				return err
			}
			ctx, cancel := r.requestContext(cmd.Context())
			defer cancel()
			resp, err := corev1.NewServiceAccountsClient(conn).CreateToken(ctx, req)
			if err != nil {
				if se := apierrors.FromError(err); se.Status.GetCode() != 0 {
					return fmt.Errorf("failed to create token: %s", se.Status.GetMessage())
				}
				return err // not the server's answer: a refused connection says so
			}
			if resp.GetStatus().GetToken() == "" {
				return errors.New("failed to create token: no token in server response")
			}
			switch o.out {
			case "":
				fmt.Fprintln(r.env.Out, resp.GetStatus().GetToken())
			case "name":
				fmt.Fprintln(r.env.Out, "tokenrequest.authentication.k8s.io/"+name)
			default:
				resp.ApiVersion, resp.Kind = "authentication.k8s.io/v1", "TokenRequest"
				(&format{name: o.out}).printTrees(r.env.Out, []any{manifest.Encode(resp)}, true)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringArrayVar(&o.audiences, "audience", nil, "an audience of the token (repeatable; default: the apiserver's)")
	f.DurationVar(&o.duration, "duration", 0, "the token's requested lifetime (default: the server's); the server may return a token with a different one")
	f.StringVar(&o.boundKind, "bound-object-kind", "", "the kind of an object to bind the token to: Pod or Secret (requires --bound-object-name)")
	f.StringVar(&o.boundName, "bound-object-name", "", "the name of the object to bind the token to; the token expires when it is deleted (requires --bound-object-kind)")
	f.StringVar(&o.boundUID, "bound-object-uid", "", "the UID of the object to bind the token to (default: the existing object's)")
	f.StringVarP(&o.out, "output", "o", "", "output format: yaml|json|name (default: the token alone)")
	return c
}

// request checks the flags as kubectl does and builds the TokenRequest.
func (o *tokenOptions) request(ns, name string) (*corev1.TokenRequest, error) {
	if o.duration < 0 {
		return nil, errors.New("--duration must be greater than or equal to 0")
	}
	if o.duration%time.Second != 0 {
		return nil, errors.New("--duration cannot be expressed in units less precise than seconds")
	}
	for _, a := range o.audiences {
		if a == "" {
			return nil, errors.New("--audience must not be an empty string")
		}
	}
	if o.boundKind == "" {
		if o.boundName != "" {
			return nil, errors.New("--bound-object-name can only be set if --bound-object-kind is provided")
		}
		if o.boundUID != "" {
			return nil, errors.New("--bound-object-uid can only be set if --bound-object-kind is provided")
		}
	} else {
		if _, ok := boundObjectAPIVersions[o.boundKind]; !ok {
			kinds := make([]string, 0, len(boundObjectAPIVersions))
			for k := range boundObjectAPIVersions {
				kinds = append(kinds, k)
			}
			slices.Sort(kinds)
			return nil, fmt.Errorf("supported --bound-object-kind values are %s", strings.Join(kinds, ", "))
		}
		if o.boundName == "" {
			return nil, errors.New("--bound-object-name is required if --bound-object-kind is provided")
		}
	}
	req := &corev1.TokenRequest{
		Metadata: &metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:     &corev1.TokenRequestSpec{Audiences: o.audiences},
	}
	if o.duration > 0 {
		secs := int64(o.duration / time.Second)
		req.Spec.ExpirationSeconds = &secs
	}
	if o.boundKind != "" {
		req.Spec.BoundObjectRef = &corev1.BoundObjectReference{
			Kind: o.boundKind, ApiVersion: boundObjectAPIVersions[o.boundKind], Name: o.boundName, Uid: o.boundUID,
		}
	}
	return req, nil
}
