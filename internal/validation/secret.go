package validation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"skiff.dev/internal/field"
	corev1 "skiff.dev/proto/core/v1"
)

// MaxSecretSize caps the summed size of a Secret's values (1 MiB, as in
// Kubernetes).
const MaxSecretSize = 1 << 20

// Secret types and the keys they require (Kubernetes' core/v1 constants).
const (
	SecretTypeOpaque              = "Opaque"
	SecretTypeServiceAccountToken = "kubernetes.io/service-account-token"
	SecretTypeDockercfg           = "kubernetes.io/dockercfg"
	SecretTypeDockerConfigJSON    = "kubernetes.io/dockerconfigjson"
	SecretTypeBasicAuth           = "kubernetes.io/basic-auth"
	SecretTypeSSHAuth             = "kubernetes.io/ssh-auth"
	SecretTypeTLS                 = "kubernetes.io/tls"

	ServiceAccountNameKey = "kubernetes.io/service-account.name"
	DockerConfigKey       = ".dockercfg"
	DockerConfigJSONKey   = ".dockerconfigjson"
	BasicAuthUsernameKey  = "username"
	BasicAuthPasswordKey  = "password"
	SSHAuthPrivateKey     = "ssh-privatekey"
	TLSCertKey            = "tls.crt"
	TLSPrivateKeyKey      = "tls.key"
)

// redacted stands for a Secret's value in an error: values are never
// printed (Kubernetes' "<secret contents redacted>").
const redacted = "<secret contents redacted>"

// Secret validates a Secret as Kubernetes' ValidateSecret: namespaced
// metadata, keys that are valid file names (as ConfigMap keys), at most
// MaxSecretSize bytes of values, and the keys each well-known type needs.
// No error carries a value of the Secret.
func Secret(s *corev1.Secret) field.ErrorList {
	if s == nil {
		s = &corev1.Secret{}
	}
	errs := ObjectMeta(s.Metadata, true, NameIsDNSSubdomain, field.NewPath("metadata"))
	dp := field.NewPath("data")
	total := 0
	for _, k := range sortedKeys(s.Data) {
		total += len(s.Data[k])
		errs = append(errs, invalidEach(dp.Key(k), k, isConfigMapKey(k))...)
	}
	if total > MaxSecretSize {
		errs = append(errs, field.TooLong(dp, MaxSecretSize))
	}
	has := func(k string) bool { _, ok := s.Data[k]; return ok }
	switch s.Type {
	case SecretTypeServiceAccountToken:
		// Only the name: the uid and the token may come later from a controller.
		if s.GetMetadata().GetAnnotations()[ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(ServiceAccountNameKey), ""))
		}
	case SecretTypeDockercfg:
		errs = append(errs, jsonKey(s, dp, DockerConfigKey)...)
	case SecretTypeDockerConfigJSON:
		errs = append(errs, jsonKey(s, dp, DockerConfigJSONKey)...)
	case SecretTypeBasicAuth:
		// Either may be empty, but one must be there.
		if !has(BasicAuthUsernameKey) && !has(BasicAuthPasswordKey) {
			errs = append(errs, field.Required(dp.Key(BasicAuthUsernameKey), ""), field.Required(dp.Key(BasicAuthPasswordKey), ""))
		}
	case SecretTypeSSHAuth:
		if len(s.Data[SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(dp.Key(SSHAuthPrivateKey), ""))
		}
	case SecretTypeTLS:
		if !has(TLSCertKey) {
			errs = append(errs, field.Required(dp.Key(TLSCertKey), ""))
		}
		if !has(TLSPrivateKeyKey) {
			errs = append(errs, field.Required(dp.Key(TLSPrivateKeyKey), ""))
		}
	}
	return errs
}

// jsonKey requires data[key] to hold a JSON object. The error says where
// the JSON breaks but, unlike encoding/json's message (which quotes the
// offending character), nothing of the value.
func jsonKey(s *corev1.Secret, dp *field.Path, key string) field.ErrorList {
	v, ok := s.Data[key]
	if !ok {
		return field.ErrorList{field.Required(dp.Key(key), "")}
	}
	var obj map[string]any
	if err := json.NewDecoder(bytes.NewReader(v)).Decode(&obj); err != nil {
		detail := "must be a valid JSON object"
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			detail = fmt.Sprintf("invalid JSON at byte offset %d", se.Offset)
		case errors.As(err, &te):
			detail = "must be a JSON object, not " + te.Value
		}
		return field.ErrorList{field.Invalid(dp.Key(key), redacted, detail)}
	}
	return nil
}

// SecretUpdate validates an update of a Secret as Kubernetes'
// ValidateSecretUpdate: immutable metadata and type, and once immutable is
// true, unchanged immutable and data; then the new Secret as on create.
func SecretUpdate(newS, oldS *corev1.Secret) field.ErrorList {
	errs := ObjectMetaUpdate(newS.GetMetadata(), oldS.GetMetadata(), field.NewPath("metadata"))
	errs = append(errs, immutable(newS.GetType(), oldS.GetType(), field.NewPath("type"))...)
	if oldS.GetImmutable() {
		const msg = "field is immutable when `immutable` is set"
		if !newS.GetImmutable() {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), msg))
		}
		if !maps.EqualFunc(newS.GetData(), oldS.GetData(), bytes.Equal) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), msg))
		}
	}
	return append(errs, Secret(newS)...)
}
