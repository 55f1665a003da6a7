package validation_test

import (
	"strings"
	"testing"

	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"

	"skiff.dev/internal/validation"
)

const secretValue = "hunter2-XYZZY-do-not-print"

func validSecret() *corev1.Secret {
	return &corev1.Secret{
		Metadata: &metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Type:     "Opaque",
		Data:     map[string][]byte{"password": []byte(secretValue)},
	}
}

// noValue fails when an error mentions a Secret's value.
func noValue(t *testing.T, errs []string) {
	t.Helper()
	for _, e := range errs {
		if strings.Contains(e, "XYZZY") || strings.Contains(e, "hunter2") {
			t.Fatalf("an error shows the secret's value: %s", e)
		}
	}
}

func TestSecret(t *testing.T) {
	s := validSecret()
	expectErrors(t, validation.Secret(s), nil)

	s = validSecret()
	s.Data["bad/key"] = []byte(secretValue)
	s.Data[".."] = nil
	expectErrors(t, validation.Secret(s), []string{"data[bad/key]: Invalid value", "data[..]: Invalid value"})

	s = validSecret()
	s.Data["big"] = make([]byte, validation.MaxSecretSize)
	errs := validation.Secret(s)
	expectErrors(t, errs, []string{"data: Too long"})
	if got := errs[0].Error(); got != "data: Too long: must have at most 1048576 bytes" {
		t.Fatalf("size error %q", got)
	}

	type tc struct {
		typ   string
		data  map[string]string
		annot map[string]string
		want  []string
	}
	v := secretValue
	for _, c := range []tc{
		{typ: validation.SecretTypeServiceAccountToken, want: []string{"metadata.annotations[kubernetes.io/service-account.name]: Required value"}},
		{typ: validation.SecretTypeServiceAccountToken, annot: map[string]string{validation.ServiceAccountNameKey: "default"}},
		{typ: validation.SecretTypeDockercfg, want: []string{"data[.dockercfg]: Required value"}},
		{typ: validation.SecretTypeDockercfg, data: map[string]string{".dockercfg": `{"` + v}, want: []string{"data[.dockercfg]: Invalid value"}},
		{typ: validation.SecretTypeDockercfg, data: map[string]string{".dockercfg": v}, want: []string{"data[.dockercfg]: Invalid value"}},
		{typ: validation.SecretTypeDockercfg, data: map[string]string{".dockercfg": `"` + v + `"`}, want: []string{"data[.dockercfg]: Invalid value"}},
		{typ: validation.SecretTypeDockercfg, data: map[string]string{".dockercfg": `{"r":{"auth":"` + v + `"}}`}},
		{typ: validation.SecretTypeDockerConfigJSON, want: []string{"data[.dockerconfigjson]: Required value"}},
		{typ: validation.SecretTypeDockerConfigJSON, data: map[string]string{".dockerconfigjson": "x" + v}, want: []string{"data[.dockerconfigjson]: Invalid value"}},
		{typ: validation.SecretTypeDockerConfigJSON, data: map[string]string{".dockerconfigjson": `{"auths":{}}`}},
		{typ: validation.SecretTypeBasicAuth, want: []string{"data[username]: Required value", "data[password]: Required value"}},
		{typ: validation.SecretTypeBasicAuth, data: map[string]string{"password": ""}},
		{typ: validation.SecretTypeSSHAuth, data: map[string]string{"ssh-privatekey": ""}, want: []string{"data[ssh-privatekey]: Required value"}},
		{typ: validation.SecretTypeSSHAuth, data: map[string]string{"ssh-privatekey": v}},
		{typ: validation.SecretTypeTLS, data: map[string]string{"tls.crt": v}, want: []string{"data[tls.key]: Required value"}},
		{typ: validation.SecretTypeTLS, want: []string{"data[tls.crt]: Required value", "data[tls.key]: Required value"}},
		{typ: validation.SecretTypeTLS, data: map[string]string{"tls.crt": v, "tls.key": v}},
		{typ: "example.com/anything"},
	} {
		s := &corev1.Secret{Metadata: &metav1.ObjectMeta{Name: "s", Namespace: "default", Annotations: c.annot}, Type: c.typ, Data: map[string][]byte{}}
		for k, val := range c.data {
			s.Data[k] = []byte(val)
		}
		errs := validation.Secret(s)
		var full []string
		for _, e := range errs {
			full = append(full, e.Error())
		}
		noValue(t, full)
		noValue(t, []string{errs.Error()})
		expectErrors(t, errs, c.want)
	}
}

func TestSecretJSONErrorRedacted(t *testing.T) {
	s := validSecret()
	s.Type = validation.SecretTypeDockerConfigJSON
	s.Data[".dockerconfigjson"] = []byte(secretValue)
	errs := validation.Secret(s)
	if len(errs) != 1 || !strings.Contains(errs.Error(), "<secret contents redacted>") {
		t.Fatalf("errors %v: want one, the value redacted", errs)
	}
	noValue(t, []string{errs.Error()})
}

func TestSecretUpdate(t *testing.T) {
	old := validSecret()
	old.Metadata.ResourceVersion = "1"
	old.Metadata.Uid = "u"
	next := validSecret()
	next.Metadata.ResourceVersion = "1"
	next.Metadata.Uid = "u"
	next.Data["password"] = []byte("new")
	expectErrors(t, validation.SecretUpdate(next, old), nil)

	next.Type = validation.SecretTypeSSHAuth
	next.Data["ssh-privatekey"] = []byte("k")
	expectErrors(t, validation.SecretUpdate(next, old), []string{"type: Invalid value"})
	expectDetail(t, validation.SecretUpdate(next, old), "type", "field is immutable")

	old.Immutable = ptr(true)
	next = validSecret()
	next.Metadata.ResourceVersion, next.Metadata.Uid = "1", "u"
	next.Immutable = ptr(true)
	expectErrors(t, validation.SecretUpdate(next, old), nil)
	next.Data["password"] = []byte("changed")
	errs := validation.SecretUpdate(next, old)
	expectErrors(t, errs, []string{"data: Forbidden"})
	expectDetail(t, errs, "data", "field is immutable when `immutable` is set")
	noValue(t, []string{errs.Error()})

	next = validSecret()
	next.Metadata.ResourceVersion, next.Metadata.Uid = "1", "u"
	next.Immutable = ptr(false)
	expectErrors(t, validation.SecretUpdate(next, old), []string{"immutable: Forbidden"})
	next.Immutable = nil
	expectErrors(t, validation.SecretUpdate(next, old), []string{"immutable: Forbidden"})
}
