package cmd

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/manifest"
	"skiff.dev/internal/object"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
	"skiff.dev/services/ctl/apply"
	"skiff.dev/services/ctl/kinds"
)

// The create commands that build an object from flags (create secret
// ...) share kubectl's output flags: --dry-run=client, -o yaml|json|name,
// --save-config.
type generatedFlags struct {
	pf         printFlags
	dryRun     string
	saveConfig bool
	appendHash bool // create secret's --append-hash
}

func (g *generatedFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&g.dryRun, "dry-run", "none", `"none" or "client" (print the object that would be sent, without sending it)`)
	c.Flags().Lookup("dry-run").NoOptDefVal = "client"
	c.Flags().BoolVar(&g.saveConfig, "save-config", false, "record the configuration in the last-applied annotation, for later applies")
	g.pf.add(c, "yaml|json|name")
}

// addAppendHash adds --append-hash (create secret's).
func (g *generatedFlags) addAppendHash(c *cobra.Command) {
	c.Flags().BoolVar(&g.appendHash, "append-hash", false, "append a hash of the secret to its name")
}

// createSecret sends (or prints) a secret a create secret command built,
// its name suffixed with its hash with --append-hash.
func (r *root) createSecret(c *cobra.Command, g *generatedFlags, s *corev1.Secret) error {
	if g.appendHash {
		s.Metadata.Name += "-" + SecretHash(s)
	}
	return r.createGenerated(c, g, "v1", "Secret", s)
}

// SecretHash is kubectl's hash of a Secret (--append-hash): of its kind,
// name, type and data, as JSON with sorted keys, the first 10 hex digits
// of its SHA-256 with 0, 1, 3, a and e mapped to g, h, k, m and t.
func SecretHash(s *corev1.Secret) string {
	data := s.GetData()
	if data == nil {
		data = map[string][]byte{}
	}
	b, _ := json.Marshal(map[string]any{"kind": "Secret", "type": s.GetType(), "name": s.GetMetadata().GetName(), "data": data})
	sum := sha256.Sum256(b)
	return strings.Map(func(r rune) rune {
		switch r {
		case '0':
			return 'g'
		case '1':
			return 'h'
		case '3':
			return 'k'
		case 'a':
			return 'm'
		case 'e':
			return 't'
		}
		return r
	}, hex.EncodeToString(sum[:])[:10])
}

// nameArg is kubectl's NAME argument of create's generators: exactly one.
func nameArg(c *cobra.Command, args []string) (string, error) {
	n := c.ArgsLenAtDash()
	if n == -1 {
		n = len(args)
	}
	if n != 1 {
		return "", usageError(c, "exactly one NAME is required, got %d", n)
	}
	return args[0], nil
}

// usageError is kubectl's UsageErrorf: the message, then where to read more.
func usageError(c *cobra.Command, format string, args ...any) error {
	return fmt.Errorf(format+"\nSee '%s -h' for help and examples", append(args, c.CommandPath())...)
}

// createGenerated sends (or with --dry-run=client only prints) an object
// the command built, as kubectl's generators do: "secret/NAME created",
// or the object in the -o format.
func (r *root) createGenerated(c *cobra.Command, g *generatedFlags, apiVersion, kindName string, obj object.Object) error {
	mode, err := dryRunMode(g.dryRun)
	if err != nil {
		return err
	}
	if err := g.pf.check("", "yaml", "json", "name"); err != nil {
		return err
	}
	res, err := r.resolve()
	if err != nil {
		return err
	}
	ctx := c.Context()
	var k *kinds.Kind
	if mode == "" {
		m, err := r.kinds(ctx)
		if err != nil {
			return err
		}
		if k, err = m.ForManifest(apiVersion, kindName); err != nil {
			return err
		}
	} else if k, err = kinds.Static().ForManifest(apiVersion, kindName); err != nil {
		return err
	}
	withTypeMeta(k, obj)
	m := object.Meta(obj)
	if k.Namespaced {
		m.Namespace = res.Namespace
	}
	if g.saveConfig {
		config := manifest.Encode(obj)
		_, value := apply.WithLastApplied(config)
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[apply.LastAppliedAnnotation] = value
	}
	if mode == "" {
		conn, err := r.connect()
		if err != nil {
			return err
		}
		rctx, cancel := r.requestContext(ctx)
		created, err := k.Client(conn).Create(rctx, obj)
		cancel()
		if err != nil {
			return createFailed(strings.ToLower(kindName), err)
		}
		obj = created
	} else {
		k.Default(obj)
		if k.CanValidate() {
			if errs := k.Validate(obj, nil); len(errs) > 0 {
				return apierrors.NewInvalid(k.Kind, m.GetName(), errs)
			}
		}
		if !res.NamespaceExplicit {
			object.Meta(obj).Namespace = "" // as kubectl prints it
		}
	}
	if g.pf.output != "" {
		printStructured(r.env.Out, g.pf.output, k, []object.Object{obj}, true)
		return nil
	}
	suffix := ""
	if mode != "" {
		suffix = " (dry run)"
	}
	fmt.Fprintf(r.env.Out, "%s created%s\n", k.Ref(obj.GetMetadata().GetName()), suffix)
	return nil
}

// createFailed words a refused create as kubectl's generators do
// ("error: failed to create secret secrets "x" already exists"); an
// error that is not the server's answer (a refused connection) keeps its
// own wording.
func createFailed(what string, err error) error {
	se := apierrors.FromError(err)
	if se == nil || se.Status.GetCode() == 0 {
		return err
	}
	return fmt.Errorf("failed to create %s %s", what, se.Status.GetMessage())
}

// ---------------------------------------------------------------- create secret

func (r *root) createSecretCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "secret (generic | docker-registry | tls)",
		Short: "Create a secret using a specified subcommand",
		Long: `Create a secret: generic (from literals, files or env files), a
docker-registry secret (a .dockerconfigjson for pulling images) or a TLS
secret (a certificate and its key).`,
	}
	c.AddCommand(r.createSecretGenericCmd(), r.createSecretDockerRegistryCmd(), r.createSecretTLSCmd())
	return c
}

func (r *root) createSecretGenericCmd() *cobra.Command {
	var (
		g                         generatedFlags
		literals, files, envFiles []string
		typ                       string
	)
	c := &cobra.Command{
		Use:   "generic NAME [--type=string] [--from-file=[key=]source] [--from-literal=key1=value1] [--from-env-file=source] [--dry-run=client]",
		Short: "Create a secret from a local file, directory, or literal value",
		Long: `Create a secret from files, directories, literal values or env files, as
kubectl does. A file's key is its base name unless given (key=path); a
directory gives a key per regular file in it; an env file gives a key per
KEY=value line (a line of only KEY takes the value of $KEY).
--from-env-file cannot be combined with --from-file or --from-literal.`,
		Example: `  skiffctl create secret generic db --from-literal=username=admin --from-literal=password=s3cr3t
  skiffctl create secret generic keys --from-file=ssh-privatekey=/path/to/id_rsa
  skiffctl create secret generic app-env --from-env-file=app.env --dry-run=client -o yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := nameArg(cmd, args)
			if err != nil {
				return err
			}
			if len(envFiles) > 0 && (len(files) > 0 || len(literals) > 0) {
				return errors.New("from-env-file cannot be combined with from-file or from-literal")
			}
			s := newSecret(name, typ, "Opaque")
			for _, l := range literals {
				key, value, ok := strings.Cut(l, "=")
				if !ok {
					return fmt.Errorf("invalid literal source %v, expected key=value", l)
				}
				if err := addSecretKey(s, key, []byte(value)); err != nil {
					return err
				}
			}
			if err := addSecretFiles(s, files); err != nil {
				return err
			}
			for _, f := range envFiles {
				if err := addSecretEnvFile(s, f, r.env.Getenv); err != nil {
					return err
				}
			}
			return r.createSecret(cmd, &g, s)
		},
	}
	c.Flags().StringArrayVar(&literals, "from-literal", nil, "a key and literal value to insert in the secret (key=value)")
	c.Flags().StringSliceVar(&files, "from-file", nil, "a file ([key=]path; the key defaults to its base name) or a directory (a key per regular file) to insert")
	c.Flags().StringSliceVar(&envFiles, "from-env-file", nil, "a file of KEY=value lines to insert")
	c.Flags().StringVar(&typ, "type", "", "the type of the secret (default Opaque)")
	g.add(c)
	g.addAppendHash(c)
	return c
}

func (r *root) createSecretDockerRegistryCmd() *cobra.Command {
	var (
		g                                 generatedFlags
		server, username, password, email string
		files                             []string
	)
	c := &cobra.Command{
		Use:   "docker-registry NAME --docker-username=user --docker-password=password --docker-email=email [--docker-server=string] [--from-file=[key=]source] [--dry-run=client]",
		Short: "Create a secret for use with a Docker registry",
		Long: `Create a kubernetes.io/dockerconfigjson secret, whose .dockerconfigjson a
pod's imagePullSecrets use to pull images from a private registry: the
registry's address, user, password, email and auth (base64 of
user:password), as kubectl writes it. --from-file takes the secret's keys
from files instead (a .dockerconfigjson of your own).`,
		Example: `  skiffctl create secret docker-registry regcred --docker-server=registry.example.com --docker-username=me --docker-password=s3cr3t --docker-email=me@example.com`,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := nameArg(cmd, args)
			if err != nil {
				return err
			}
			if len(files) == 0 && (username == "" || password == "" || server == "") {
				return errors.New("either --from-file or the combination of --docker-username, --docker-password and --docker-server is required")
			}
			s := newSecret(name, "kubernetes.io/dockerconfigjson", "")
			if len(files) > 0 {
				if err := addSecretFiles(s, files); err != nil {
					return err
				}
			} else {
				s.Data[".dockerconfigjson"] = DockerConfigJSON(server, username, password, email)
			}
			return r.createSecret(cmd, &g, s)
		},
	}
	c.Flags().StringVar(&server, "docker-server", "https://index.docker.io/v1/", "the server of the Docker registry")
	c.Flags().StringVar(&username, "docker-username", "", "the user name for the Docker registry")
	c.Flags().StringVar(&password, "docker-password", "", "the password for the Docker registry")
	c.Flags().StringVar(&email, "docker-email", "", "the email for the Docker registry")
	c.Flags().StringSliceVar(&files, "from-file", nil, "files ([key=]path) whose contents are the secret's keys, instead of the --docker flags")
	g.add(c)
	g.addAppendHash(c)
	return c
}

// dockerConfigEntry and dockerConfig are the .dockerconfigjson of a
// registry credential, field for field as kubectl writes it.
type dockerConfigEntry struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Email    string `json:"email,omitempty"`
	Auth     string `json:"auth,omitempty"`
}

type dockerConfig struct {
	Auths map[string]dockerConfigEntry `json:"auths"`
}

// DockerConfigJSON is the .dockerconfigjson of one registry's credential:
// {"auths":{server:{"username","password","email","auth"}}}, auth being
// base64(username:password).
func DockerConfigJSON(server, username, password, email string) []byte {
	b, _ := json.Marshal(dockerConfig{Auths: map[string]dockerConfigEntry{server: {
		Username: username, Password: password, Email: email,
		Auth: base64.StdEncoding.EncodeToString([]byte(username + ":" + password)),
	}}})
	return b
}

func (r *root) createSecretTLSCmd() *cobra.Command {
	var (
		g         generatedFlags
		cert, key string
	)
	c := &cobra.Command{
		Use:   "tls NAME --cert=path/to/cert/file --key=path/to/key/file [--dry-run=client]",
		Short: "Create a TLS secret",
		Long: `Create a kubernetes.io/tls secret from a PEM certificate (chain) and its
private key (keys tls.crt and tls.key). The pair must load: a key that
does not match the certificate is refused before anything is sent.`,
		Example: `  skiffctl create secret tls web-tls --cert=path/to/tls.crt --key=path/to/tls.key`,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, err := nameArg(cmd, args)
			if err != nil {
				return err
			}
			if cert == "" || key == "" {
				return errors.New("key and cert must be specified")
			}
			certPEM, err := readSecretFile(cert)
			if err != nil {
				return err
			}
			keyPEM, err := readSecretFile(key)
			if err != nil {
				return err
			}
			if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
				return err // crypto/tls's words name no key material
			}
			s := newSecret(name, "kubernetes.io/tls", "")
			s.Data["tls.crt"] = certPEM
			s.Data["tls.key"] = keyPEM
			return r.createSecret(cmd, &g, s)
		},
	}
	c.Flags().StringVar(&cert, "cert", "", "the PEM certificate (chain) file")
	c.Flags().StringVar(&key, "key", "", "the PEM private key file")
	g.add(c)
	g.addAppendHash(c)
	return c
}

// newSecret is an empty secret of type typ (def when typ is empty).
func newSecret(name, typ, def string) *corev1.Secret {
	if typ == "" {
		typ = def
	}
	return &corev1.Secret{Metadata: &metav1.ObjectMeta{Name: name}, Type: typ, Data: map[string][]byte{}}
}

// configKey is a valid key of a Secret's (or ConfigMap's) data.
var configKey = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// secretKeyErrors is Kubernetes' IsConfigMapKey: why key is not a valid
// key of a Secret's data.
func secretKeyErrors(key string) []string {
	var errs []string
	if len(key) > 253 {
		errs = append(errs, "must be no more than 253 characters")
	}
	if !configKey.MatchString(key) {
		errs = append(errs, "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")
	}
	switch {
	case key == ".":
		errs = append(errs, "must not be '.'")
	case key == "..":
		errs = append(errs, "must not be '..'")
	case strings.HasPrefix(key, ".."):
		errs = append(errs, "must not start with '..'")
	}
	return errs
}

// addSecretKey adds one key, refusing an invalid or repeated one (the
// errors name the key, never the value).
func addSecretKey(s *corev1.Secret, key string, value []byte) error {
	if errs := secretKeyErrors(key); len(errs) > 0 {
		return fmt.Errorf("%q is not valid key name for a Secret %s", key, strings.Join(errs, ";"))
	}
	if _, ok := s.Data[key]; ok {
		return fmt.Errorf("cannot add key %s, another key by that name already exists", key)
	}
	s.Data[key] = value
	return nil
}

// parseFileSource is kubectl's [key=]path of --from-file.
func parseFileSource(source string) (key, file string, err error) {
	switch n := strings.Count(source, "="); {
	case n == 0:
		return path.Base(filepath.ToSlash(source)), source, nil
	case n == 1 && strings.HasPrefix(source, "="):
		return "", "", fmt.Errorf("key name for file path %v missing", strings.TrimPrefix(source, "="))
	case n == 1 && strings.HasSuffix(source, "="):
		return "", "", fmt.Errorf("file path for key name %v missing", strings.TrimSuffix(source, "="))
	case n > 1:
		return "", "", errors.New("key names or file paths cannot contain '='")
	}
	key, file, _ = strings.Cut(source, "=")
	return key, file, nil
}

// addSecretFiles adds --from-file's sources: a file as one key, a
// directory as a key per regular file in it.
func addSecretFiles(s *corev1.Secret, sources []string) error {
	for _, src := range sources {
		key, file, err := parseFileSource(src)
		if err != nil {
			return err
		}
		info, err := os.Stat(file)
		if err != nil {
			return readError(file, err)
		}
		if !info.IsDir() {
			b, err := readSecretFile(file)
			if err != nil {
				return err
			}
			if err := addSecretKey(s, key, b); err != nil {
				return err
			}
			continue
		}
		if strings.Contains(src, "=") {
			return errors.New("cannot give a key name for a directory path")
		}
		entries, err := os.ReadDir(file)
		if err != nil {
			return fmt.Errorf("error listing files in %s: %v", file, err)
		}
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			b, err := readSecretFile(filepath.Join(file, e.Name()))
			if err != nil {
				return err
			}
			if err := addSecretKey(s, e.Name(), b); err != nil {
				return err
			}
		}
	}
	return nil
}

func readSecretFile(file string) ([]byte, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, readError(file, err)
	}
	return b, nil
}

func readError(file string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("error reading %s: %v", file, err)
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// envVarName is Kubernetes' IsEnvVarName.
var envVarName = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)

// addSecretEnvFile adds the KEY=value lines of an env file, as kubectl
// reads one: leading blanks and comment lines skipped, a BOM on the first
// line dropped, a line of only KEY taking $KEY's value.
func addSecretEnvFile(s *corev1.Secret, file string, getenv func(string) string) error {
	info, err := os.Stat(file)
	if err != nil {
		return readError(file, err)
	}
	if info.IsDir() {
		return errors.New("env secret file cannot be a directory")
	}
	src, err := os.ReadFile(file)
	if err != nil {
		return readError(file, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(nil, 1<<20)
	for n := 0; sc.Scan(); n++ {
		line := sc.Bytes()
		if !utf8.Valid(line) {
			return fmt.Errorf("env file %s contains invalid utf8 bytes at line %d", file, n+1)
		}
		if n == 0 {
			line = bytes.TrimPrefix(line, utf8BOM)
		}
		line = bytes.TrimLeftFunc(line, unicode.IsSpace)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		key, value, hasValue := strings.Cut(string(line), "=")
		if !envVarName.MatchString(key) || key == "." || strings.HasPrefix(key, "..") {
			return fmt.Errorf("%q is not a valid key name: a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')", key)
		}
		if !hasValue {
			value = getenv(key)
		}
		if err := addSecretKey(s, key, []byte(value)); err != nil {
			return err
		}
	}
	return sc.Err()
}
