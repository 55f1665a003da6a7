package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/gorilla/websocket"
	"google.golang.org/protobuf/proto"

	"skiff.dev/internal/apierrors"
	corev1 "skiff.dev/proto/core/v1"
	metav1 "skiff.dev/proto/meta/v1"
)

// exec and attach over WebSocket, Kubernetes' channel protocol (what
// kubectl exec speaks first): each binary message is one channel's byte
// then its data; the client writes stdin (0), terminal resizes (4, JSON
// {"Width":w,"Height":h}) and, in v5, the close of stdin (255 then 0);
// the server writes stdout (1), stderr (2) and last the result on the
// error channel (3): a Status, Success or Failure with reason
// NonZeroExitCode and the exit code as a cause. The streams are the
// Pods.Exec and Pods.Attach gRPC methods', through the chain (authorized
// as create of pods/exec or pods/attach).

const (
	chanStdin  = 0
	chanStdout = 1
	chanStderr = 2
	chanError  = 3
	chanResize = 4
	chanClose  = 255
)

// channelProtocols are the WebSocket subprotocols served, preferred first.
var channelProtocols = []string{"v5.channel.k8s.io", "v4.channel.k8s.io"}

var upgrader = websocket.Upgrader{
	Subprotocols:    channelProtocols,
	ReadBufferSize:  32 << 10,
	WriteBufferSize: 32 << 10,
	// Credentials are the request's (certificates, tokens), not cookies:
	// no origin to check.
	CheckOrigin: func(*http.Request) bool { return true },
}

// execOptions reads exec's or attach's query.
func execOptions(r *http.Request, req resourceRequest) *corev1.PodExecOptions {
	q := r.URL.Query()
	return &corev1.PodExecOptions{Namespace: req.namespace, Name: req.name, Container: q.Get("container"), Command: q["command"],
		Stdin: isTrue(q.Get("stdin")), Stdout: isTrue(q.Get("stdout")), Stderr: isTrue(q.Get("stderr")), Tty: isTrue(q.Get("tty"))}
}

func (h *Handler) execStream(w http.ResponseWriter, r *http.Request, req resourceRequest, name string) {
	if !websocket.IsWebSocketUpgrade(r) {
		writeError(w, apierrors.NewBadRequest("exec and attach are served over WebSocket (subprotocol v5.channel.k8s.io or v4.channel.k8s.io); SPDY is not"))
		return
	}
	opts := execOptions(r, req)
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	defer ws.Close()
	v5 := ws.Subprotocol() == channelProtocols[0]
	write := func(channel byte, data []byte) error {
		return ws.WriteMessage(websocket.BinaryMessage, append([]byte{channel}, data...))
	}
	var code *int32
	recv := func() (proto.Message, error) {
		for {
			typ, data, err := ws.ReadMessage()
			if err != nil {
				return nil, io.EOF
			}
			if typ != websocket.BinaryMessage || len(data) == 0 {
				continue
			}
			switch data[0] {
			case chanStdin:
				if len(data) > 1 {
					return &corev1.ExecRequest{Stdin: data[1:]}, nil
				}
			case chanResize:
				var size struct{ Width, Height uint32 }
				if json.Unmarshal(data[1:], &size) == nil {
					return &corev1.ExecRequest{Resize: &corev1.TerminalSize{Width: size.Width, Height: size.Height}}, nil
				}
			case chanClose:
				if v5 && len(data) > 1 && data[1] == chanStdin {
					return &corev1.ExecRequest{StdinClose: true}, nil
				}
			}
		}
	}
	send := func(b []byte) error {
		var resp corev1.ExecResponse
		if err := proto.Unmarshal(b, &resp); err != nil {
			return err
		}
		if len(resp.GetStdout()) > 0 {
			if err := write(chanStdout, resp.GetStdout()); err != nil {
				return err
			}
		}
		if len(resp.GetStderr()) > 0 {
			if err := write(chanStderr, resp.GetStderr()); err != nil {
				return err
			}
		}
		if resp.ExitCode != nil {
			code = resp.ExitCode
		}
		return nil
	}
	err = h.cfg.Methods.Bidi(requestContext(r), method(req.kind, name), &corev1.ExecRequest{Options: opts}, recv, send)
	_ = write(chanError, execResult(code, err))
	_ = ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
}

// execResult is the error channel's Status: Success, the command's
// non-zero exit code, or the stream's error.
func execResult(code *int32, err error) []byte {
	var st *metav1.Status
	switch {
	case err != nil && !errors.Is(err, io.EOF):
		st = apierrors.FromError(err).Status
		st.Status = "Failure"
	case code != nil && *code != 0:
		st = &metav1.Status{Status: "Failure", Reason: "NonZeroExitCode",
			Message: fmt.Sprintf("command terminated with non-zero exit code: error executing command [%d]", *code),
			Details: &metav1.StatusDetails{Causes: []*metav1.StatusCause{{Reason: "ExitCode", Message: strconv.Itoa(int(*code))}}}}
	default:
		st = &metav1.Status{Status: "Success"}
	}
	return statusJSON(st)
}
