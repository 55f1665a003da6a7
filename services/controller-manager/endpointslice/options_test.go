package endpointslice

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	cases := []struct {
		o    Options
		want string // "" valid, else a part of the error
	}{
		{Options{}, ""},
		{Options{Workers: 3, MaxEndpointsPerSlice: 1000, BatchPeriod: time.Second}, ""},
		{Options{Workers: -1}, "Workers: -1"},
		{Options{MaxEndpointsPerSlice: 1001}, "MaxEndpointsPerSlice: 1001, must be between 1 and 1000"},
		{Options{MaxEndpointsPerSlice: -5}, "MaxEndpointsPerSlice: -5"},
		{Options{BatchPeriod: -time.Second}, "BatchPeriod: -1s"},
	}
	for _, tc := range cases {
		err := tc.o.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v, want valid", tc.o, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want one with %q", tc.o, err, tc.want)
		}
	}
}
