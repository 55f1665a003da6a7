package conformance

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"skiff.dev/internal/client"
	"skiff.dev/internal/kinds"
	"skiff.dev/services/apiserver/apiservertest"
)

// FuzzCreate sends random bytes as the Create, Update and UpdateStatus
// requests of every declared kind, seeded with each kind's example
// manifest (a kind without one fails): the server never panics nor
// answers Internal or Unknown; bad input gets a client error with a
// message.
func FuzzCreate(f *testing.F) {
	all := kinds.All()
	for i, k := range all {
		obj, err := exampleOf(k)
		if err != nil {
			f.Fatal(err)
		}
		b, err := proto.Marshal(obj)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), b)
	}
	f.Add(uint8(0), []byte{0x1a, 0xff, 0xff, 0xff, 0xff, 0x0f})
	s := apiservertest.Start(f)
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		svc := all[int(which)%len(all)].Service()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, method := range []string{"Create", "Update", "UpdateStatus"} {
			var out emptypb.Empty // any answer decodes as unknown fields
			err := s.Conn.Invoke(ctx, "/"+svc+"/"+method, data, &out, client.Raw())
			if err == nil {
				continue
			}
			st := status.Convert(err)
			switch st.Code() {
			case codes.InvalidArgument, codes.AlreadyExists, codes.NotFound, codes.Aborted, codes.Unimplemented:
			default:
				t.Fatalf("%s/%s: unexpected %v: %s", svc, method, st.Code(), st.Message())
			}
			if strings.TrimSpace(st.Message()) == "" {
				t.Fatalf("%s/%s: error without a message", svc, method)
			}
		}
	})
}
