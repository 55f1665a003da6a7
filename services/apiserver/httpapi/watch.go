package httpapi

import (
	"context"
	"errors"
	"net/http"

	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	"skiff.dev/internal/object"
	metav1 "skiff.dev/proto/meta/v1"
)

// watch streams a resource's changes as kube-apiserver does: a 200 once
// the watch is established, then one JSON object per event,
// {"type":"ADDED","object":{...}}, each flushed as it comes (chunked in
// HTTP/1.1, frames in HTTP/2). A watch from a resourceVersion the server
// no longer has is established all the same and gets one ERROR event with
// a 410 Expired Status, as the watch cache answers it (client-go's
// reflector relists on either form); other refusals (403, 400) are plain
// errors.
func (h *Handler) watch(w http.ResponseWriter, r *http.Request, req resourceRequest) {
	opts, err := listOptions(r, req.namespace)
	if err != nil {
		writeError(w, err)
		return
	}
	flusher, _ := w.(http.Flusher)
	asTable := wantsTable(r)
	started := false
	start := func() {
		if started {
			return
		}
		started = true
		if asTable {
			w.Header().Set("Content-Type", tableContentType)
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(http.StatusOK)
		if flusher != nil {
			flusher.Flush()
		}
	}
	var buf []byte
	ctx := requestContext(r)
	err = h.cfg.Methods.Stream(ctx, method(req.kind, "Watch"), opts, start, func(b []byte) error {
		var resp metav1.WatchResponse
		if err := proto.Unmarshal(b, &resp); err != nil {
			return err
		}
		buf = buf[:0]
		for _, ev := range resp.GetEvents() {
			obj := req.kind.New()
			if err := proto.Unmarshal(ev.GetObject(), obj); err != nil {
				return err
			}
			body := encodeJSON(obj)
			if asTable && ev.GetType() != "BOOKMARK" {
				// kubectl get -w: each event's object is a Table of one row.
				var err error
				if body, err = table(r, obj, []object.Object{obj}, nil); err != nil {
					return err
				}
			}
			buf = appendEvent(buf, ev.GetType(), body)
		}
		start()
		if _, err := w.Write(buf); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	})
	switch {
	case err == nil, errors.Is(err, context.Canceled), r.Context().Err() != nil:
		start()
	case !started && !apierrors.IsExpired(err) && apierrors.HTTPStatusCode(err) != http.StatusGone:
		writeError(w, err)
	default:
		start()
		st := apierrors.FromError(err).Status
		if st.GetCode() == 0 {
			st.Code = int32(apierrors.HTTPStatusCode(err))
		}
		st.Status = "Failure"
		_, _ = w.Write(appendEvent(nil, "ERROR", statusJSON(st)))
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// appendEvent appends one watch event's line.
func appendEvent(b []byte, typ string, obj []byte) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","object":`...)
	b = append(b, obj...)
	return append(b, "}\n"...)
}
