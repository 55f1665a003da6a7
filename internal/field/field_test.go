package field

import "testing"

func TestPathString(t *testing.T) {
	cases := []struct {
		name string
		path *Path
		want string
	}{
		{"top", NewPath("metadata"), "metadata"},
		{"nested", NewPath("spec", "template", "spec"), "spec.template.spec"},
		{"index", NewPath("spec").Child("containers").Index(2).Child("image"), "spec.containers[2].image"},
		{"key", NewPath("metadata", "labels").Key("app"), "metadata.labels[app]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.path.String(); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestErrorMessages(t *testing.T) {
	p := NewPath("spec", "replicas")
	cases := []struct {
		err  *Error
		want string
	}{
		{Required(NewPath("metadata", "name"), "name or generateName is required"), "metadata.name: Required value: name or generateName is required"},
		{Invalid(p, -1, "must be greater than or equal to 0"), "spec.replicas: Invalid value: -1: must be greater than or equal to 0"},
		{NotSupported(NewPath("spec", "restartPolicy"), "Sometimes", []string{"Always", "Never"}), `spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never"`},
		{Duplicate(NewPath("spec", "containers").Index(1).Child("name"), "web"), `spec.containers[1].name: Duplicate value: "web"`},
		{NotFound(NewPath("spec", "ephemeralContainers").Index(0).Child("targetContainerName"), "db"), `spec.ephemeralContainers[0].targetContainerName: Not found: "db"`},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got %q\nwant %q", got, c.want)
		}
	}
	list := ErrorList{cases[0].err, cases[1].err}
	if got, want := list.Error(), cases[0].want+"; "+cases[1].want; got != want {
		t.Errorf("list: got %q want %q", got, want)
	}
}
