package leaderelection

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	coordinationv1 "skiff.dev/proto/coordination/v1"
)

type nopLeases struct{}

func (nopLeases) Get(context.Context, string, string, ...grpc.CallOption) (*coordinationv1.Lease, error) {
	return nil, errors.New("unused")
}
func (nopLeases) Create(context.Context, *coordinationv1.Lease, ...grpc.CallOption) (*coordinationv1.Lease, error) {
	return nil, errors.New("unused")
}
func (nopLeases) Update(context.Context, *coordinationv1.Lease, ...grpc.CallOption) (*coordinationv1.Lease, error) {
	return nil, errors.New("unused")
}

func validConfig() Config {
	return Config{
		Lock:          LeaseLock{Namespace: "kube-system", Name: "skiff-controller-manager"},
		Identity:      "node-a",
		Client:        nopLeases{},
		LeaseDuration: time.Second,
		RenewDeadline: 600 * time.Millisecond,
		RetryPeriod:   100 * time.Millisecond,
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Config)
		want   []string // substrings of the error; none: valid
	}{
		{"valid", func(*Config) {}, nil},
		{"zero durations take Kubernetes' defaults", func(c *Config) { c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = 0, 0, 0 }, nil},
		{"identity missing", func(c *Config) { c.Identity = "" }, []string{"Identity: required"}},
		{"lock missing", func(c *Config) { c.Lock = LeaseLock{} }, []string{"Lock.Namespace: required", "Lock.Name: required"}},
		{"client missing", func(c *Config) { c.Client = nil }, []string{"Client: required"}},
		{"renew deadline not below lease duration", func(c *Config) { c.RenewDeadline = time.Second },
			[]string{"RenewDeadline: 1s must be less than LeaseDuration (1s)"}},
		{"retry period not below renew deadline", func(c *Config) { c.RetryPeriod = time.Second },
			[]string{"RetryPeriod: 1s must be less than RenewDeadline (600ms)"}},
		{"sub-second lease", func(c *Config) { c.LeaseDuration = 900 * time.Millisecond },
			[]string{"LeaseDuration: 900ms is less than 1s"}},
		{"negative renew deadline", func(c *Config) { c.RenewDeadline = -time.Second },
			[]string{"RenewDeadline: -1s must be positive", "RetryPeriod: 100ms must be less than RenewDeadline (-1s)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.mutate(&c)
			err := c.withDefaults().validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("validate() = %v, want ErrInvalidConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestRunRefusesBadConfigAtOnce(t *testing.T) {
	c := validConfig()
	c.Identity = ""
	err := Run(context.Background(), c, func(context.Context) { t.Error("lead called") })
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Run() = %v, want ErrInvalidConfig", err)
	}
	if err := Run(context.Background(), validConfig(), nil); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Run(nil lead) = %v, want ErrInvalidConfig", err)
	}
}
